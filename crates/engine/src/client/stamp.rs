//! When response bytes reached the socket, by the kernel's clock: every
//! socket asks for receive timestamps (SO_TIMESTAMPNS, socket(7)), and each
//! read or io_uring receive comes with the arrival time of the last segment
//! it took. The measurement then does not depend on when the worker woke to
//! read: a thread that sleeps a while longer to read many responses at once,
//! or a busy machine that wakes it late, does not lengthen what it measures.
//! Both transports stamp the same way (wrk and ab read the clock when they
//! read, so their latencies include their own wake-up).

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Control space for one timestamp: CMSG_SPACE(sizeof(struct timespec)).
pub(crate) const CONTROL_BYTES: usize = 32;
/// A cmsghdr: length (size_t), level, type; the data follows it aligned.
const CMSG_HEADER_BYTES: usize = 16;
const TIMESPEC_BYTES: usize = 16;

/// A kernel receive timestamp: CLOCK_REALTIME, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp(i128);

/// Asks the kernel to stamp what arrives on socket `fd`. A socket that
/// refuses is read without stamps, at the time of reading.
pub(crate) fn enable(fd: RawFd) {
    let one: libc::c_int = 1;
    // SAFETY: a valid option value for a socket descriptor; errors are harmless.
    unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&raw const one).cast(), size_of_val(&one) as _)
    };
}

/// The timestamp among a message's control data (cmsg(3)), read byte by
/// byte: io_uring puts it wherever a provided buffer starts.
pub(crate) fn parse(control: &[u8]) -> Option<Stamp> {
    let word = |at: usize| usize::from_ne_bytes(control[at..at + 8].try_into().expect("8 bytes"));
    let int = |at: usize| i32::from_ne_bytes(control[at..at + 4].try_into().expect("4 bytes"));
    let mut at = 0;
    while at + CMSG_HEADER_BYTES <= control.len() {
        let len = word(at);
        if len < CMSG_HEADER_BYTES {
            return None;
        }
        let data = at + CMSG_HEADER_BYTES;
        let is_stamp = int(at + 8) == libc::SOL_SOCKET && int(at + 12) == libc::SCM_TIMESTAMPNS;
        if is_stamp && len >= CMSG_HEADER_BYTES + TIMESPEC_BYTES && data + TIMESPEC_BYTES <= control.len() {
            let (sec, nsec) = (word(data) as i64, word(data + 8) as i64);
            return Some(Stamp(i128::from(sec) * 1_000_000_000 + i128::from(nsec)));
        }
        at += len.next_multiple_of(8);
    }
    None
}

/// Reads socket `fd` into `buf` with recvmsg(2), returning the byte count
/// and the arrival stamp of the data read.
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Stamp>)> {
    let mut control = [0u64; CONTROL_BYTES / 8];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: an all-zero msghdr is valid (no name, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL_BYTES as _;
    // SAFETY: the iovec and control buffer outlive the call.
    let n = unsafe { libc::recvmsg(fd, &raw mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `control` is CONTROL_BYTES of plain memory.
    let bytes = unsafe { std::slice::from_raw_parts(control.as_ptr().cast::<u8>(), msg.msg_controllen as usize) };
    Ok((n as usize, parse(bytes)))
}

/// The monotonic and the wall clock read together, so that stamps (wall
/// clock) convert to `Instant`s: read once per wait, after it, which is
/// precise to the wall clock's drift over one wait (parts per million).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wall {
    instant: Instant,
    real_ns: i128,
}

impl Wall {
    pub(crate) fn read() -> Wall {
        let instant = Instant::now();
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid clock and output; CLOCK_REALTIME cannot fail.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &raw mut ts) };
        Wall { instant, real_ns: i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec) }
    }

    /// When data stamped `stamp` arrived, no later than `now` (data read
    /// was there by then, whatever the wall clock did). Unstamped, `now`.
    pub(crate) fn arrival(&self, stamp: Option<Stamp>, now: Instant) -> Instant {
        let Some(Stamp(ns)) = stamp else { return now };
        let at = match u64::try_from(self.real_ns - ns) {
            Ok(ago) => self.instant.checked_sub(Duration::from_nanos(ago)).unwrap_or(self.instant),
            // Stamped after the clocks were read: the wall clock stepped.
            Err(_) => self.instant,
        };
        at.min(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmsg(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let mut v = (CMSG_HEADER_BYTES + data.len()).to_ne_bytes().to_vec();
        v.extend(level.to_ne_bytes());
        v.extend(kind.to_ne_bytes());
        v.extend(data);
        v.resize(v.len().next_multiple_of(8), 0);
        v
    }

    fn timespec(sec: i64, nsec: i64) -> Vec<u8> {
        [sec.to_ne_bytes(), nsec.to_ne_bytes()].concat()
    }

    #[test]
    fn finds_the_timestamp_among_other_control_messages() {
        let mut control = cmsg(libc::IPPROTO_IP, 1, &[7; 4]);
        control.extend(cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &timespec(12, 345)));
        assert_eq!(parse(&control), Some(Stamp(12_000_000_345)));
    }

    #[test]
    fn truncated_or_absent_timestamps_are_none() {
        let whole = cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &timespec(1, 2));
        assert_eq!(parse(&whole[..whole.len() - 1]), None);
        assert_eq!(parse(&[]), None);
        assert_eq!(parse(&cmsg(libc::SOL_SOCKET, libc::SCM_RIGHTS, &timespec(1, 2))), None);
        assert_eq!(parse(&[0; 32]), None, "a zero length ends the walk");
    }

    #[test]
    fn stamps_convert_to_instants_no_later_than_now() {
        let wall = Wall::read();
        let now = wall.instant + Duration::from_millis(1);
        let five_ms_before = Stamp(wall.real_ns - 5_000_000);
        assert_eq!(wall.arrival(Some(five_ms_before), now), wall.instant - Duration::from_millis(5));
        let after = Stamp(wall.real_ns + 10_000_000);
        assert_eq!(wall.arrival(Some(after), now), wall.instant);
        assert_eq!(wall.arrival(None, now), now);
    }

    #[test]
    fn a_loopback_socket_stamps_what_arrives() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        enable(client.as_raw_fd());
        let (mut server, _) = listener.accept().unwrap();
        let mut buf = [0u8; 16];
        // The kernel turns stamping on from a work queue: until then
        // (first use in this boot) segments come unstamped.
        let mut stamped = false;
        for _ in 0..1000 {
            server.write_all(b"x").unwrap();
            std::thread::sleep(Duration::from_millis(1));
            stamped = recv(client.as_raw_fd(), &mut buf).unwrap().1.is_some();
            if stamped {
                break;
            }
        }
        assert!(stamped, "no receive timestamps in a second");
        let before = Wall::read();
        server.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let (n, stamp) = recv(client.as_raw_fd(), &mut buf).unwrap();
        let wall = Wall::read();
        assert_eq!(&buf[..n], b"hello");
        let at = wall.arrival(stamp, Instant::now());
        // Arrived when written, not when read 100 ms later; 50 ms leaves a
        // busy machine room to preempt this thread between its clock reads.
        // (Two clock pairs: allow their reads' microsecond of skew.)
        let since = at.saturating_duration_since(before.instant);
        assert!(at + Duration::from_millis(1) >= before.instant && since < Duration::from_millis(50), "{since:?}");
    }
}
