//! A connection served start to end by one thread or process: the prefork
//! and threads models, as Apache's prefork and worker MPMs do.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::exchange::{answer_h2, handle, Ctx, Handled, Local};
use super::h2;
use super::http::Delay;
use super::tls::Wire;

/// How often a blocked read looks at the shutdown flag.
const CHECK: Duration = Duration::from_millis(100);

pub(crate) fn serve_connection(stream: TcpStream, ctx: &Ctx, local: &mut Local, stop: &AtomicBool, buf: &mut Vec<u8>) {
    let peer = stream.peer_addr().ok();
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(CHECK));
    let Ok(mut stream) = Wire::new(stream, ctx.tls.as_ref()) else { return };
    buf.clear();
    let mut chunk = [0u8; 16 * 1024];
    let mut idle_since = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        // The first bytes say which protocol the connection speaks.
        let handled = match h2::speaks_h2(buf) {
            Some(true) => return serve_h2(stream, ctx, local, stop, buf, peer),
            Some(false) => handle(ctx, buf, peer, local),
            None => Handled::NeedMore,
        };
        match handled {
            Handled::NeedMore => match stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    idle_since = Instant::now();
                }
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    if idle_since.elapsed() > ctx.keep_alive_timeout {
                        return;
                    }
                }
                Err(_) => return,
            },
            Handled::Respond { mut out, keep_alive, delay, consumed } => {
                if !stalled(ctx, stream.socket(), stop) || !delay.is_none_or(|d| wait(ctx, d, stream.socket(), stop)) {
                    return;
                }
                if out.write_to(&mut stream).is_err() || !keep_alive {
                    return;
                }
                buf.drain(..consumed.min(buf.len()));
                idle_since = Instant::now();
            }
        }
    }
}

/// An HTTP/2 connection, its streams answered one after another: a thread
/// or process serves one connection at a time, whatever it multiplexes.
fn serve_h2(
    mut stream: Wire<TcpStream>,
    ctx: &Ctx,
    local: &mut Local,
    stop: &AtomicBool,
    first: &[u8],
    peer: Option<SocketAddr>,
) {
    let Ok(mut conn) = h2::Connection::new() else { return };
    let mut out = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    let mut ready = Vec::new();
    let mut ok = conn.receive(first).is_ok();
    let mut idle_since = Instant::now();
    while ok && !stop.load(Ordering::Relaxed) {
        ready.extend(conn.ready());
        for r in ready.drain(..) {
            if !stalled(ctx, stream.socket(), stop) {
                return;
            }
            let response = answer_h2(ctx, &r, peer, local);
            if !response.delay.is_none_or(|d| wait(ctx, d, stream.socket(), stop)) {
                return;
            }
            conn.respond(r.stream, response, r.method == b"HEAD");
        }
        out.clear();
        if conn.send(&mut out).is_err() || stream.write_all(&out).is_err() || !conn.alive() {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                ok = conn.receive(&chunk[..n]).is_ok();
                idle_since = Instant::now();
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if !conn.busy() && idle_since.elapsed() > ctx.keep_alive_timeout {
                    return;
                }
            }
            Err(_) => return,
        }
    }
    // Not HTTP/2: the session has queued its GOAWAY; it goes before the close.
    out.clear();
    if conn.send(&mut out).is_ok() {
        let _ = stream.write_all(&out);
    }
}

/// Waits out the server's stall, if one is under way; false when the
/// client left or the server stops meanwhile.
fn stalled(ctx: &Ctx, socket: &TcpStream, stop: &AtomicBool) -> bool {
    match ctx.stall.and_then(|s| s.ends_at(Instant::now())) {
        Some(end) => wait(ctx, Delay::fixed(end.saturating_duration_since(Instant::now())), socket, stop),
        None => true,
    }
}

/// Waits out a response's delay in slices of at most CHECK, so that a
/// worker is never held past its use: a client that has gone or a server
/// told to stop (SIGTERM) ends the wait, and a queued request then leaves
/// the queue; a queued request's departure is asked again each slice, as
/// it moves up when a client ahead leaves. True when the response is due.
fn wait(ctx: &Ctx, delay: Delay, socket: &TcpStream, stop: &AtomicBool) -> bool {
    let fixed = Instant::now() + delay.length;
    loop {
        let due = match delay.queued {
            // Gone from the queue: it has departed.
            Some(t) => match ctx.router.queue.departure(t) {
                Some(d) => d,
                None => return true,
            },
            None => fixed,
        };
        let now = Instant::now();
        if now >= due {
            return true;
        }
        if stop.load(Ordering::Relaxed) || gone(socket) {
            if let Some(t) = delay.queued {
                ctx.router.queue.leave(t, now);
            }
            return false;
        }
        std::thread::sleep((due - now).min(CHECK));
    }
}

/// The client closed or reset the connection: a peek that does not wait
/// reads its end (0 bytes) or an error other than "nothing yet". Bytes
/// waiting (a pipelined request) mean it is still there.
fn gone(socket: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = 0u8;
    // SAFETY: a one-byte buffer we own, on the socket's open descriptor.
    let n = unsafe { libc::recv(socket.as_raw_fd(), (&raw mut byte).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    match n {
        0 => true,
        n if n > 0 => false,
        _ => !matches!(
            std::io::Error::last_os_error().kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        ),
    }
}
