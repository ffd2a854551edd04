//! A connection served start to end by one thread or process: the prefork
//! and threads models, as Apache's prefork and worker MPMs do.

use std::io::Read;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::exchange::{handle, Ctx, Handled, Local};

/// How often a blocked read looks at the shutdown flag.
const CHECK: Duration = Duration::from_millis(100);

pub(crate) fn serve_connection(
    mut stream: TcpStream,
    ctx: &Ctx,
    local: &mut Local,
    stop: &AtomicBool,
    buf: &mut Vec<u8>,
) {
    let peer = stream.peer_addr().ok();
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(CHECK));
    buf.clear();
    let mut chunk = [0u8; 16 * 1024];
    let mut idle_since = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        match handle(ctx, buf, peer, local) {
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
