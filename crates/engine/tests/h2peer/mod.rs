//! A scripted HTTP/2 server at the frame level, for the client's tests:
//! well-behaved, or hostile in one of the ways RFC 9113 allows a peer to be
//! (or forbids it). It reads the client's frames itself and writes its own,
//! the response heads HPACK-encoded by hand (":status: 200" is index 8 of
//! the static table, RFC 7541 Appendix A), so no HTTP/2 library is trusted
//! on this side of the test.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

const PREFACE_LEN: usize = 24;
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

#[derive(Clone, Copy, Debug)]
pub enum Peer {
    /// Answers every request: 200 and the body "ok".
    Good,
    /// Answers this many requests per connection, then GOAWAY (last stream:
    /// the last answered) and closes.
    GoAwayAfter(u64),
    /// Resets every stream (RST_STREAM, INTERNAL_ERROR).
    ResetEveryStream,
    /// A zero initial window that never opens: no request body can go.
    ZeroWindow,
    /// SETTINGS frames without end, never an answer.
    SettingsFlood,
    /// Never reads after its SETTINGS.
    StopsReading,
    /// Bytes that are no HTTP/2 frame, in answer to the first request.
    Garbage,
}

pub struct PeerServer {
    pub url: String,
    /// Requests answered with a response.
    pub answered: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len() as u32;
    let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn setting(id: u16, value: u32) -> Vec<u8> {
    [id.to_be_bytes().as_slice(), &value.to_be_bytes()].concat()
}

pub fn start(peer: Peer) -> PeerServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (answered, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    let (a, s) = (answered.clone(), stop.clone());
    thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((sock, _)) => {
                    let (a, s) = (a.clone(), s.clone());
                    thread::spawn(move || serve(sock, peer, &a, &s));
                }
                Err(_) => thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    PeerServer { url, answered, stop }
}

fn serve(mut sock: TcpStream, peer: Peer, answered: &AtomicU64, stop: &AtomicBool) {
    sock.set_nonblocking(false).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let _ = sock.set_nodelay(true);
    let window = match peer {
        Peer::ZeroWindow => 0,
        _ => (1 << 31) - 1,
    };
    let mut hello = frame(SETTINGS, 0, 0, &setting(0x4, window));
    if window > 0 {
        hello.extend(frame(WINDOW_UPDATE, 0, 0, &((1u32 << 31) - 1 - 65_535).to_be_bytes()));
    }
    if sock.write_all(&hello).is_err() {
        return;
    }
    match peer {
        Peer::SettingsFlood => return flood(sock, stop),
        Peer::StopsReading => {
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(20));
            }
            return;
        }
        _ => {}
    }
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 16 * 1024]);
    let mut preface = false;
    let mut served = 0u64;
    while !stop.load(Ordering::SeqCst) {
        match sock.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        if !preface {
            if buf.len() < PREFACE_LEN {
                continue;
            }
            buf.drain(..PREFACE_LEN);
            preface = true;
        }
        while buf.len() >= 9 {
            let len = (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
            if buf.len() < 9 + len {
                break;
            }
            let (kind, flags) = (buf[3], buf[4]);
            let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            buf.drain(..9 + len);
            let mut out = Vec::new();
            if kind == SETTINGS && flags & ACK == 0 {
                out = frame(SETTINGS, ACK, 0, &[]);
            }
            let request_ends = matches!(kind, HEADERS | DATA) && flags & END_STREAM != 0;
            if kind == HEADERS || request_ends {
                match peer {
                    Peer::ResetEveryStream if kind == HEADERS => {
                        out = frame(RST_STREAM, 0, stream, &2u32.to_be_bytes());
                    }
                    Peer::Garbage if kind == HEADERS => out = b"\xff\xfe garbage, not a frame \x00\x01".repeat(4),
                    Peer::Good | Peer::GoAwayAfter(_) if request_ends => {
                        out = frame(HEADERS, END_HEADERS, stream, &[0x88]);
                        out.extend(frame(DATA, END_STREAM, stream, b"ok"));
                        served += 1;
                        answered.fetch_add(1, Ordering::SeqCst);
                        if let Peer::GoAwayAfter(n) = peer {
                            if served == n {
                                let payload = [stream.to_be_bytes(), 0u32.to_be_bytes()].concat();
                                out.extend(frame(GOAWAY, 0, 0, &payload));
                                let _ = sock.write_all(&out);
                                return close_gracefully(sock, stop);
                            }
                        }
                    }
                    _ => {}
                }
            }
            if !out.is_empty() && sock.write_all(&out).is_err() {
                return;
            }
        }
    }
}

/// Closes after the last write as a server should: its side shut, then
/// the client's requests read and dropped until it closes (at most 2 s).
/// Closed with requests unread, the socket would reset the connection, and
/// a reset can discard a response the client has not read yet: the client
/// would ask again for what was answered.
fn close_gracefully(mut sock: TcpStream, stop: &AtomicBool) {
    let _ = sock.shutdown(std::net::Shutdown::Write);
    let (end, mut chunk) = (Instant::now() + Duration::from_secs(2), [0u8; 16 * 1024]);
    while !stop.load(Ordering::SeqCst) && Instant::now() < end {
        match sock.read(&mut chunk) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// SETTINGS frames as fast as the socket takes them, for at most 5 s.
fn flood(mut sock: TcpStream, stop: &AtomicBool) {
    let batch = frame(SETTINGS, 0, 0, &[]).repeat(1000);
    let end = Instant::now() + Duration::from_secs(5);
    sock.set_write_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut at = 0;
    while !stop.load(Ordering::SeqCst) && Instant::now() < end {
        // Whole frames: a write cut short goes on where it stopped.
        match sock.write(&batch[at..]) {
            Ok(n) => at = (at + n) % batch.len(),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}
