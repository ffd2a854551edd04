//! Small purpose-built HTTP servers for the engine's tests, on free loopback
//! ports, each answering with a fixed script of bytes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

pub struct TestServer {
    pub url: String,
    pub requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// What the server does with each request head it reads.
#[derive(Clone, Copy)]
pub enum Reply {
    /// Sends these bytes; keeps the connection open when `keep` is set.
    Bytes(&'static [u8], bool),
    /// Reads the request and never answers.
    Silent,
}

fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>, stop: &AtomicBool) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            return true;
        }
        match s.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                if stop.load(Ordering::SeqCst) {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
}

pub fn start(reply: Reply) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (r, st) = (requests.clone(), stop.clone());
    thread::spawn(move || {
        while !st.load(Ordering::SeqCst) {
            let Ok((mut s, _)) = listener.accept() else {
                thread::sleep(Duration::from_millis(1));
                continue;
            };
            let (r, st) = (r.clone(), st.clone());
            thread::spawn(move || {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                let mut buf = Vec::new();
                while read_head(&mut s, &mut buf, &st) {
                    r.fetch_add(1, Ordering::SeqCst);
                    match reply {
                        Reply::Bytes(bytes, keep) => {
                            if s.write_all(bytes).is_err() || !keep {
                                return;
                            }
                        }
                        Reply::Silent => {
                            while !st.load(Ordering::SeqCst) {
                                thread::sleep(Duration::from_millis(5));
                            }
                            return;
                        }
                    }
                }
            });
        }
    });
    TestServer { url, requests, stop }
}

/// A port with nothing listening on it.
pub fn refused_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/")
}
