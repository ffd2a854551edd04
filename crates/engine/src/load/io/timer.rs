//! A timerfd in the worker's event loop. epoll_wait's timeout counts whole
//! milliseconds, too coarse for a schedule of thousands of requests per
//! second; a timerfd wakes the loop at the instant the next request is due.
//! A periodic one wakes it for the worker's ticks (see `TICK`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

pub(crate) struct Timer {
    fd: OwnedFd,
    armed_for: Option<Instant>,
}

impl Timer {
    pub(crate) fn new(registry: &Registry, token: Token) -> io::Result<Timer> {
        // SAFETY: timerfd_create has no preconditions; the result is checked.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(Timer { fd, armed_for: None })
    }

    /// A timer that fires every `period`, from `period` from now on.
    pub(crate) fn periodic(registry: &Registry, token: Token, period: Duration) -> io::Result<Timer> {
        let timer = Timer::new(registry, token)?;
        timer.set(period, period)?;
        Ok(timer)
    }

    /// Wakes the loop at `at` (at once when it has passed). Re-arming resets
    /// the expiry count, so a new edge follows.
    pub(crate) fn arm(&mut self, at: Instant, now: Instant) {
        if self.armed_for == Some(at) {
            return;
        }
        let wait = at.saturating_duration_since(now).max(Duration::from_nanos(1));
        // A valid fd and time cannot be refused.
        let _ = self.set(wait, Duration::ZERO);
        self.armed_for = Some(at);
    }

    fn set(&self, value: Duration, interval: Duration) -> io::Result<()> {
        let spec = |d: Duration| libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as _ };
        let spec = libc::itimerspec { it_interval: spec(interval), it_value: spec(value) };
        // SAFETY: valid fd and a fully initialised itimerspec.
        match unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Consumes an expiry after the timer's event.
    pub(crate) fn fired(&mut self) {
        let mut ticks = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a buffer of 8; EAGAIN is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), ticks.as_mut_ptr().cast(), ticks.len()) };
        self.armed_for = None;
    }
}
