//! A connection served start to end by one thread or process: the prefork
//! and threads models, as Apache's prefork and worker MPMs do.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::exchange::{answer_h2, handle, Ctx, Handled, Local};
use super::h2;
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
                if let Some(end) = ctx.stall.and_then(|s| s.ends_at(Instant::now())) {
                    std::thread::sleep(end.saturating_duration_since(Instant::now()));
                }
                if let Some(d) = delay {
                    std::thread::sleep(d);
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
            if let Some(end) = ctx.stall.and_then(|s| s.ends_at(Instant::now())) {
                std::thread::sleep(end.saturating_duration_since(Instant::now()));
            }
            let response = answer_h2(ctx, &r, peer, local);
            if let Some(d) = response.delay {
                std::thread::sleep(d);
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
