//! The io_uring driver. Each connection keeps one multishot receive armed
//! (recvmsg, kernel 6.0) drawing from a provided-buffer ring, so a response
//! costs no system call of its own, and each completion carries its arrival
//! stamp (`client::stamp`); sends and connects are queued and go to the
//! kernel together, with the wait, in one io_uring_enter per loop turn. The
//! ring is single-issuer with deferred task work (kernel 6.1): completions
//! run when the worker asks for them, on its own CPU, not as interrupts of
//! whatever it is doing. Peers do the same: the liburing examples, and the
//! io_uring servers and generators that report lower cost than epoll on
//! small responses (Axboe, "io_uring and networking in 2023").

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::OnceLock;
use std::time::Instant;

use io_uring::types::{Fd, RecvMsgOut, SubmitArgs, TimeoutFlags, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};
use socket2::SockAddr;

use super::bufring::{BufRing, GROUP};
use super::{Driver, Peer, TICK};
use crate::client::conn::{failed, Conn, Phase, Step};
use crate::client::stamp::{self, Stamp, Wall};
use crate::client::transport::{RingSocket, Transport};
use crate::measure::stats::ErrorKind;
use crate::workload::{Request, Requests};

/// Receive buffers per worker: 64 KB each (a large body in few
/// completions), one per connection from 32 up to 256 (16 MB; an arrival
/// touches only the pages it fills, so small responses keep little of it
/// resident). Fewer than connections is fine: a receive that finds none
/// ends (ENOBUFS) and is armed again once the batch is handed back.
/// Buffers are consumed whole: a recvmsg needs room for its header and
/// stamp in every buffer it takes, which an incrementally consumed one
/// (Linux 6.12) cannot promise (a remainder too short fails the receive).
const BUFFER_BYTES: usize = 64 * 1024;
const MIN_BUFFERS: usize = 32;
const MAX_BUFFERS: usize = 256;

/// Requests up to this size are sent without a completion on success.
const SMALL_REQUEST_BYTES: usize = 16 * 1024;

/// io_uring_enter's IORING_ENTER_GETEVENTS (the crate keeps its flags private).
const GETEVENTS: u32 = 1;

/// The periodic wake-up's tag (slot 0, connection 0, op 0).
const TICKER: u64 = 0;
const CONNECT: u64 = 1;
const SEND: u64 = 2;
const RECV: u64 = 3;

/// What the receives ask of each message: no address, room for the stamp.
/// The kernel reads it when a receive is armed.
struct MsgHeader(libc::msghdr);

// SAFETY: the header points at nothing; only its lengths are read.
unsafe impl Send for MsgHeader {}

impl MsgHeader {
    fn new() -> Box<MsgHeader> {
        // SAFETY: an all-zero msghdr is valid: no name, iovec or control.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_controllen = stamp::CONTROL_BYTES as _;
        Box::new(MsgHeader(msg))
    }
}

/// A completion, copied out of the ring.
#[derive(Clone, Copy)]
pub(crate) struct Cqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

/// An operation's tag: its slot, the slot's connection number (so that a
/// closed connection's late completions are known) and what it was.
fn tag(slot: usize, conn: u32, op: u64) -> u64 {
    (slot as u64) << 32 | u64::from(conn) << 2 | op
}

fn untag(user_data: u64) -> (usize, u32, u64) {
    ((user_data >> 32) as usize, (user_data as u32) >> 2, user_data & 3)
}

#[derive(Default)]
struct Slot {
    /// Counts the slot's connections (30 bits in a tag).
    conn: u32,
    /// A send of the current request awaits its completion.
    sending: bool,
}

pub(crate) struct Uring {
    // Dropped before the buffers its ring may still write into.
    ops: Ops,
    bufs: BufRing,
    cq_entries: usize,
    /// The clocks as the last wait ended, for the completions it brought.
    wall: Wall,
    /// What the next wait may wait for (`Driver::linger`): completions, and
    /// until when.
    want: usize,
    linger_until: Option<Instant>,
    /// A multishot timeout completes every `TICK`, so waits for nothing
    /// sooner need no timeout of their own (see `TICK`).
    ticking: bool,
}

/// The periodic wake-up's period, where the kernel reads it.
static TICK_SPEC: Timespec = Timespec::new().sec(TICK.as_secs()).nsec(TICK.subsec_nanos());

/// The ring and what its operations refer to.
struct Ops {
    ring: IoUring,
    slots: Vec<Slot>,
    /// The peer's address, where connects read it until they complete.
    addr: Option<Box<SockAddr>>,
    msg: Box<MsgHeader>,
}

fn pow2_within(n: usize, lo: usize, hi: usize) -> usize {
    n.next_power_of_two().clamp(lo, hi)
}

fn build(entries: u32, cq: u32) -> io::Result<IoUring> {
    // Disabled until the worker enables it from its own thread: a
    // single-issuer ring belongs to the thread that enables it.
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_r_disabled()
        .setup_cqsize(cq)
        .setup_clamp()
        .build(entries)
}

impl Uring {
    /// The ring running, without the periodic tick `start` adds: a test's
    /// wait then ends only at what it waits for.
    pub(super) fn start_quiet(&mut self) -> io::Result<()> {
        self.ops.ring.submitter().register_enable_rings()?;
        self.bufs.register(&self.ops.ring)
    }

    pub(crate) fn new(connections: usize) -> io::Result<Uring> {
        let sq = pow2_within(connections, 64, 4096);
        let cq = pow2_within(connections * 4, 256, 65536);
        let ring = build(sq as u32, cq as u32)?;
        let cq_entries = ring.params().cq_entries() as usize;
        let slots = (0..connections).map(|_| Slot::default()).collect();
        Ok(Uring {
            ops: Ops { ring, slots, addr: None, msg: MsgHeader::new() },
            bufs: BufRing::new(pow2_within(connections, MIN_BUFFERS, MAX_BUFFERS) as u16, BUFFER_BYTES),
            cq_entries,
            wall: Wall::read(),
            want: 1,
            linger_until: None,
            ticking: false,
        })
    }
}

impl Ops {
    fn push(&mut self, sqe: squeue::Entry) {
        // SAFETY: every entry's pointers (the peer's address, a workload's
        // request bytes) outlive the run.
        let mut refused = 0;
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            // Full: hand the queue to the kernel and go on. The queue holds a
            // slot's worth of entries per connection, the completion queue
            // four, so a kernel that keeps refusing is a bug to report, not a
            // reason to spin.
            match self.ring.submit() {
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EAGAIN | libc::EINTR)) => {
                    refused += 1;
                    assert!(refused < 1000, "io_uring keeps refusing submissions: {e}");
                }
                Err(e) => panic!("io_uring submit: {e}"),
                Ok(_) => {}
            }
        }
    }

    fn arm_recv(&mut self, i: usize, fd: i32) {
        let conn = self.slots[i].conn;
        let msg = &raw const self.msg.0;
        self.push(opcode::RecvMsgMulti::new(Fd(fd), msg, GROUP).build().user_data(tag(i, conn, RECV)));
    }

    /// Sends `bytes` whole: MSG_WAITALL makes io_uring retry a short send
    /// itself. A small request's success posts no completion at all: it
    /// leaves at once, into an empty socket buffer, before any answer can
    /// come, so there is nothing to wait for (a failure still completes).
    fn send(&mut self, i: usize, fd: i32, bytes: &[u8]) {
        let conn = self.slots[i].conn;
        let small = bytes.len() <= SMALL_REQUEST_BYTES;
        self.slots[i].sending = !small;
        let op = opcode::Send::new(Fd(fd), bytes.as_ptr(), bytes.len() as u32).flags(libc::MSG_WAITALL).build();
        let op = if small { op.flags(squeue::Flags::SKIP_SUCCESS) } else { op };
        self.push(op.user_data(tag(i, conn, SEND)));
    }

    fn connect(&mut self, i: usize, c: &mut Conn, peer: &Peer<'_>) -> Step {
        let addr = &**self.addr.get_or_insert_with(|| Box::new(SockAddr::from(peer.addr)));
        let (family, ptr, len) = (addr.family(), addr.as_ptr(), addr.len());
        let flags = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        // SAFETY: socket(2) has no preconditions; the result is checked.
        let fd = unsafe { libc::socket(i32::from(family), flags, 0) };
        if fd < 0 {
            return failed(ErrorKind::Connect, "connect", io::Error::last_os_error());
        }
        // SAFETY: a new descriptor owned by nothing else.
        let sock = RingSocket(unsafe { OwnedFd::from_raw_fd(fd) });
        stamp::enable(fd);
        let one: libc::c_int = 1;
        // SAFETY: a valid socket and option value. A failure only costs latency.
        unsafe {
            libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&raw const one).cast(), size_of_val(&one) as _)
        };
        self.slots[i].conn = (self.slots[i].conn + 1) & (u32::MAX >> 2);
        self.slots[i].sending = false;
        let conn = self.slots[i].conn;
        self.push(opcode::Connect::new(Fd(fd), ptr.cast(), len).build().user_data(tag(i, conn, CONNECT)));
        c.transport = Some(Transport::Ring(sock));
        c.phase = Phase::Connecting;
        Step::Pending
    }

    fn fd(c: &Conn) -> i32 {
        match &c.transport {
            Some(Transport::Ring(s)) => s.fd(),
            _ => unreachable!("an io_uring slot without its socket"),
        }
    }

    /// What a completion means for its slot's request; a receive's
    /// `data` is its payload and arrival.
    fn complete(
        &mut self,
        ev: Cqe,
        data: Option<(&[u8], Instant)>,
        c: &mut Conn,
        requests: &Requests,
        now: Instant,
    ) -> Option<Step> {
        let (i, conn, op) = untag(ev.user_data);
        if self.slots[i].conn != conn || c.transport.is_none() {
            return None; // a closed connection's last word
        }
        let err = || io::Error::from_raw_os_error(-ev.res);
        let req = requests.get(c.entry.request);
        match op {
            CONNECT if ev.res < 0 => Some(failed(ErrorKind::Connect, "connect", err())),
            CONNECT => {
                c.connected_at(now);
                let fd = Self::fd(c);
                self.arm_recv(i, fd);
                self.send(i, fd, req.bytes);
                c.sending(now);
                Some(Step::Pending)
            }
            SEND => {
                self.slots[i].sending = false;
                if ev.res < 0 {
                    return Some(c.send_failed(err()));
                }
                if !c.sent(ev.res as usize, req.bytes) {
                    let rest = c.unsent(req.bytes);
                    self.send(i, Self::fd(c), rest);
                }
                Some(Step::Pending)
            }
            _ => self.received(i, ev, data, c, req),
        }
    }

    fn received(
        &mut self,
        i: usize,
        ev: Cqe,
        data: Option<(&[u8], Instant)>,
        c: &mut Conn,
        req: Request<'_>,
    ) -> Option<Step> {
        let rearm = !cqueue::more(ev.flags);
        // A recvmsg's end of stream is a message with no payload.
        let payload = data.filter(|(bytes, _)| !bytes.is_empty());
        let step = if ev.res == -libc::ENOBUFS {
            // Every buffer was taken: nothing was read, so nothing is lost.
            Step::Pending
        } else if c.phase == Phase::Idle {
            // Between requests the server has nothing to say: the end of the
            // stream, or bytes no request asked for. The connection is
            // dropped, as the epoll driver drops it (`Conn::ready`).
            c.close();
            return Some(Step::Pending);
        } else if ev.res < 0 {
            c.closed_by_peer(Some(io::Error::from_raw_os_error(-ev.res)))
        } else if let Some((bytes, at)) = payload {
            c.received(at, bytes, req.head, false).unwrap_or(Step::Pending)
        } else {
            c.closed_by_peer(None)
        };
        let live = payload.is_some() || ev.res == -libc::ENOBUFS;
        if rearm && live && matches!(step, Step::Pending | Step::Done) && c.transport.is_some() {
            self.arm_recv(i, Self::fd(c));
        }
        Some(step)
    }
}

impl Driver for Uring {
    type Event = Cqe;
    const NAME: &'static str = "io_uring";

    fn start(&mut self) -> io::Result<()> {
        self.start_quiet()?;
        let features = features().ok();
        if features.is_some_and(|f| f.multishot_timeout) {
            let tick = opcode::Timeout::new(&TICK_SPEC).flags(TimeoutFlags::MULTISHOT).build();
            self.ops.push(tick.user_data(TICKER));
            self.ticking = true;
        }
        Ok(())
    }

    fn capacity(&self) -> usize {
        self.cq_entries
    }

    fn wait(&mut self, events: &mut Vec<Cqe>, until: Instant, tick: Instant, now: Instant) -> io::Result<()> {
        self.bufs.publish();
        let ring = &mut self.ops.ring;
        let (want, linger) = (std::mem::replace(&mut self.want, 1), self.linger_until.take());
        let waited = if until <= now {
            let queued = ring.submission().len() as u32;
            // SAFETY: no argument; GETEVENTS runs the deferred completions.
            unsafe { ring.submitter().enter::<libc::sigset_t>(queued, 0, GETEVENTS, None) }
        } else if let Some(by) = linger.filter(|&by| want > 1 && by > now) {
            // Deferred task work wakes this thread only once `want`
            // completions are in, or at the timeout.
            let ts = Timespec::from(by.min(until) - now);
            ring.submitter().submit_with_args(want, &SubmitArgs::new().timespec(&ts))
        } else if self.ticking && until >= tick {
            ring.submit_and_wait(1)
        } else {
            // A timeout in nanoseconds: no timerfd needed for the schedule.
            let ts = Timespec::from(until - now);
            ring.submitter().submit_with_args(1, &SubmitArgs::new().timespec(&ts))
        };
        self.wall = Wall::read();
        match waited {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        events.extend(ring.completion().map(|e| Cqe { user_data: e.user_data(), res: e.result(), flags: e.flags() }));
        Ok(())
    }

    fn linger(&mut self, want: usize, by: Instant) {
        (self.want, self.linger_until) = (want, Some(by));
    }

    fn begin(&mut self, i: usize, c: &mut Conn, peer: &Peer<'_>, request: &[u8], now: Instant) -> Step {
        let ops = &mut self.ops;
        if c.transport.is_some() && ops.slots[i].sending {
            // The last request's send is still out (the server answered
            // before reading all of it): this connection's bytes are not ours
            // to count on; a new one takes the request.
            c.close();
        }
        if c.transport.is_none() {
            return ops.connect(i, c, peer);
        }
        // A reused connection: `prepare` already set its connect time.
        ops.send(i, Ops::fd(c), request);
        c.sending(now);
        Step::Pending
    }

    fn advance(
        &mut self,
        ev: Cqe,
        conns: &mut [Conn],
        _: &mut [u8],
        requests: &Requests,
        now: Instant,
        done: &mut Vec<(usize, Step)>,
    ) {
        if ev.user_data == TICKER {
            // A timeout that ended (an error, not its period) is not armed
            // again: waits take their own timeouts from then on.
            self.ticking &= cqueue::more(ev.flags);
            return;
        }
        let (i, _, op) = untag(ev.user_data);
        let bid = if op == RECV { cqueue::buffer_select(ev.flags) } else { None };
        let step = match bid {
            Some(bid) => {
                // The buffer is read in place, then handed back.
                let message = RecvMsgOut::parse(self.bufs.get(bid, ev.res.max(0) as usize), &self.ops.msg.0).ok();
                let data = message.as_ref().map(|m| {
                    let stamp: Option<Stamp> = stamp::parse(m.control_data());
                    (m.payload_data(), self.wall.arrival(stamp, now))
                });
                let step = self.ops.complete(ev, data, &mut conns[i], requests, now);
                self.bufs.release(bid);
                step
            }
            None => self.ops.complete(ev, None, &mut conns[i], requests, now),
        };
        if let Some(s) = step {
            done.push((i, s));
        }
    }
}

/// Whether io_uring works here, with what the load needs of it: checked
/// once per process by making a ring of the kind the workers make. Err
/// says why not (the kernel's answer, or the sysctl that forbids it).
pub fn io_uring_support() -> Result<(), String> {
    features().map(|_| ())
}

/// What this kernel's io_uring offers beyond what the load needs.
#[derive(Clone, Copy, Debug)]
struct Features {
    /// Multishot timeouts (Linux 6.4).
    multishot_timeout: bool,
}

fn features() -> Result<Features, String> {
    static SUPPORT: OnceLock<Result<Features, String>> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

fn probe() -> Result<Features, String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut version = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (version.next().unwrap_or(0), version.next().unwrap_or(0));
    if (major, minor) < (6, 1) {
        return Err(format!("kernel {} is older than 6.1 (multishot receive, deferred task work)", release.trim()));
    }
    let ring = build(8, 16).map_err(|e| {
        let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").unwrap_or_default();
        match sysctl.trim() {
            "" | "0" => format!("io_uring_setup: {e}"),
            v => format!("io_uring_setup: {e}; kernel.io_uring_disabled = {v}"),
        }
    })?;
    ring.submitter().register_enable_rings().map_err(|e| format!("enabling a ring: {e}"))?;
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe).map_err(|e| format!("probing io_uring: {e}"))?;
    for (code, name) in
        [(opcode::Connect::CODE, "connect"), (opcode::Send::CODE, "send"), (opcode::RecvMsgMulti::CODE, "recvmsg")]
    {
        if !probe.is_supported(code) {
            return Err(format!("this kernel's io_uring has no {name}"));
        }
    }
    // The ring tried is unregistered before its memory goes.
    let mut bufs = BufRing::new(2, 64);
    bufs.register(&ring).map_err(|e| format!("registering a buffer ring: {e}"))?;
    ring.submitter().unregister_buf_ring(GROUP).map_err(|e| format!("unregistering a buffer ring: {e}"))?;
    Ok(Features { multishot_timeout: (major, minor) >= (6, 4) })
}
