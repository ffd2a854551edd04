//! One HTTP/2 client session (RFC 9113, nghttp2) driven through memory:
//! bytes the socket gave are fed in, bytes to write are taken out, and what
//! happened to each stream comes back as events. The socket, the clock and
//! the slots stay the worker's, so the timestamps are taken where the
//! HTTP/1.x path takes them.

use std::ffi::{c_int, c_void};
use std::ptr;

pub(crate) use corebench_nghttp2::h2_error;
use corebench_nghttp2::sys as ng;
use corebench_nghttp2::{Handlers, Side};

use super::request::H2Request;

/// The stream and connection receive windows this client grants (2^30 - 1,
/// h2load's default `-w 30 -W 30`): a load generator reads everything at
/// once, so the server's sending is never held by our window.
const WINDOW: i32 = (1 << 30) - 1;

/// What the session saw. `slot` is the worker's slot the stream carries,
/// `id` the stream, so an event of a stream its slot gave up is told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// The first frame of a response head arrived.
    Head {
        slot: usize,
        id: i32,
    },
    Status {
        slot: usize,
        id: i32,
        status: u16,
    },
    /// A head's frame as received (HPACK-compressed, with its frame header).
    HeadBytes {
        slot: usize,
        id: i32,
        n: u64,
    },
    Body {
        slot: usize,
        id: i32,
        n: u64,
    },
    /// END_STREAM arrived: the response is complete.
    End {
        slot: usize,
        id: i32,
    },
    /// The stream closed without a complete response: `code` says why.
    Closed {
        slot: usize,
        id: i32,
        code: u32,
    },
    /// The request's HEADERS frame was serialized for the socket.
    Sent {
        slot: usize,
        id: i32,
    },
    /// The server's SETTINGS: it speaks HTTP/2.
    Settings,
    GoAway {
        last_stream: i32,
        code: u32,
    },
    /// The server reset a stream (RST_STREAM).
    Reset,
}

impl Event {
    /// The slot and stream an event is about, if it is about one.
    pub(crate) fn stream(&self) -> Option<(usize, i32)> {
        match *self {
            Event::Head { slot, id }
            | Event::Status { slot, id, .. }
            | Event::HeadBytes { slot, id, .. }
            | Event::Body { slot, id, .. }
            | Event::End { slot, id }
            | Event::Closed { slot, id, .. }
            | Event::Sent { slot, id } => Some((slot, id)),
            Event::Settings | Event::GoAway { .. } | Event::Reset => None,
        }
    }
}

/// A request body being sent: the read callback's position in it.
struct BodyCursor {
    data: *const u8,
    len: usize,
    at: usize,
}

/// What the callbacks write to: boxed, so its address stays fixed for
/// nghttp2, which holds it as the session's user data.
struct Inbox {
    events: Vec<Event>,
    /// The first response's Server header, while `want_server`.
    server: Option<String>,
    want_server: bool,
    /// Request bodies in flight, by the stream's place on this connection.
    bodies: Vec<BodyCursor>,
    /// nghttp2's last complaint about the server (a bad frame, a flood): set
    /// when it ends the session itself, with a GOAWAY of its own.
    fault: Option<String>,
}

pub(crate) struct Session {
    // Before `inbox` (fields drop in order): the session, which holds the
    // inbox's address, goes first.
    session: corebench_nghttp2::Session,
    inbox: Box<Inbox>,
}

impl Session {
    /// A client session for a connection carrying at most `streams` requests
    /// at once; its preface and SETTINGS are queued to send.
    pub(crate) fn client(streams: usize, want_server: bool) -> Result<Session, String> {
        let mut inbox = Box::new(Inbox {
            events: Vec::with_capacity(8 * streams + 8),
            server: None,
            want_server,
            bodies: (0..streams).map(|_| BodyCursor { data: ptr::null(), len: 0, at: 0 }).collect(),
            fault: None,
        });
        let handlers = Handlers {
            on_begin_headers: Some(on_begin_headers),
            on_header: Some(on_header),
            on_frame_recv: Some(on_frame_recv),
            on_data_chunk_recv: Some(on_data_chunk),
            on_stream_close: Some(on_stream_close),
            on_frame_send: Some(on_frame_send),
            on_error: Some(on_error),
        };
        let settings =
            [(ng::NGHTTP2_SETTINGS_ENABLE_PUSH, 0), (ng::NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW as u32)];
        let user_data = (&mut *inbox as *mut Inbox).cast();
        // SAFETY: the inbox is boxed (it never moves) and outlives the
        // session (see the field order of `Session`).
        let session = unsafe { corebench_nghttp2::Session::new(Side::Client, &handlers, user_data, &settings)? };
        // SAFETY: a live session.
        match unsafe { ng::nghttp2_session_set_local_window_size(session.raw(), 0, 0, WINDOW) } {
            0 => Ok(Session { session, inbox }),
            e => Err(corebench_nghttp2::lib_error(e as isize)),
        }
    }

    /// Queues request `r` for `slot`, the `place`-th stream of this
    /// connection; returns its stream id.
    pub(crate) fn submit(&mut self, slot: usize, place: usize, r: &H2Request) -> Result<i32, String> {
        let nva = r.nv();
        let body = r.body();
        let provider;
        let data = match body.is_empty() {
            true => ptr::null(),
            false => {
                self.inbox.bodies[place] = BodyCursor { data: body.as_ptr(), len: body.len(), at: 0 };
                provider = ng::nghttp2_data_provider2 {
                    source: ng::nghttp2_data_source { ptr: (&mut self.inbox.bodies[place] as *mut BodyCursor).cast() },
                    read_callback: Some(read_body),
                };
                &provider as *const ng::nghttp2_data_provider2
            }
        };
        // SAFETY: the name/value pairs are copied by nghttp2 before it
        // returns; the body's bytes belong to the driver's request list,
        // which outlives every session; the cursor is in the boxed inbox.
        let raw = self.session.raw();
        let id = unsafe {
            ng::nghttp2_submit_request2(raw, ptr::null(), nva.as_ptr(), nva.len(), data, (slot + 1) as *mut c_void)
        };
        match id {
            id if id > 0 => Ok(id),
            e => Err(corebench_nghttp2::lib_error(e as isize)),
        }
    }

    /// Resets a stream its slot no longer waits for (it timed out).
    pub(crate) fn cancel(&mut self, id: i32) {
        // SAFETY: a live session; an unknown or closed stream is refused
        // harmlessly. The slot is detached first, so its close reports nothing.
        unsafe {
            ng::nghttp2_session_set_stream_user_data(self.session.raw(), id, ptr::null_mut());
            ng::nghttp2_submit_rst_stream(self.session.raw(), 0, id, ng::NGHTTP2_CANCEL);
        }
    }

    /// Feeds bytes the socket gave; Err when they are not valid HTTP/2 (or
    /// a flood nghttp2 refuses): the connection cannot go on.
    pub(crate) fn receive(&mut self, data: &[u8]) -> Result<(), String> {
        self.session.receive(data)
    }

    /// Appends what the session has to send to `out`.
    pub(crate) fn send(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        self.session.send(out)
    }

    /// False once the session has nothing more to do (after GOAWAY both ways
    /// with no stream open, or a fatal error).
    pub(crate) fn alive(&self) -> bool {
        self.session.alive()
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (2^32 - 1 when it set none).
    pub(crate) fn server_max_streams(&self) -> u32 {
        // SAFETY: a live session.
        unsafe {
            ng::nghttp2_session_get_remote_settings(self.session.raw(), ng::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        }
    }

    /// Whether request bodies are held by the server's flow-control window:
    /// the connection's or stream `id`'s is spent.
    pub(crate) fn window_closed(&self, id: i32) -> bool {
        // SAFETY: a live session; an unknown stream gives -1.
        unsafe {
            ng::nghttp2_session_get_remote_window_size(self.session.raw()) <= 0
                || ng::nghttp2_session_get_stream_remote_window_size(self.session.raw(), id) == 0
        }
    }

    /// Whether the body of the stream in `place` is still being sent.
    pub(crate) fn body_pending(&self, place: usize) -> bool {
        let b = &self.inbox.bodies[place];
        b.at < b.len
    }

    pub(crate) fn events(&mut self) -> &mut Vec<Event> {
        &mut self.inbox.events
    }

    /// What nghttp2 found wrong with the server's frames, if it did.
    pub(crate) fn fault(&self) -> Option<&str> {
        self.inbox.fault.as_deref()
    }

    /// The first response's Server header, once.
    pub(crate) fn take_server(&mut self) -> Option<String> {
        self.inbox.want_server = false;
        self.inbox.server.take()
    }
}

// SAFETY: a session is used by one thread at a time (its worker's); the
// body cursors' pointers are into the driver's requests, which that thread
// owns with it.
unsafe impl Send for Session {}

/// The inbox and the slot of a stream, from the callbacks' arguments.
///
/// SAFETY: `user_data` is the session's boxed inbox.
unsafe fn inbox<'a>(user_data: *mut c_void) -> &'a mut Inbox {
    unsafe { &mut *user_data.cast::<Inbox>() }
}

/// The slot stream `id` carries; None for a stream no slot waits for.
///
/// SAFETY: `session` is live.
unsafe fn slot(session: *mut ng::nghttp2_session, id: i32) -> Option<usize> {
    let p = unsafe { ng::nghttp2_session_get_stream_user_data(session, id) } as usize;
    p.checked_sub(1)
}

unsafe extern "C" fn on_begin_headers(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a valid frame and our inbox.
    unsafe {
        let id = (*frame).hd.stream_id;
        if let Some(slot) = slot(session, id) {
            inbox(user_data).events.push(Event::Head { slot, id });
        }
    }
    0
}

unsafe extern "C" fn on_header(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    name: *const u8,
    namelen: usize,
    value: *const u8,
    valuelen: usize,
    _flags: u8,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes valid slices, a valid frame and our inbox.
    unsafe {
        let id = (*frame).hd.stream_id;
        let name = std::slice::from_raw_parts(name, namelen);
        let value = std::slice::from_raw_parts(value, valuelen);
        let inbox = inbox(user_data);
        // The name first: the stream's slot is looked up (a hash lookup in
        // nghttp2) only for the fields kept, not for each of a head's fields.
        match name {
            b":status" => {
                let Some(slot) = slot(session, id) else { return 0 };
                // nghttp2 has checked it is three digits (RFC 9113 §8.3.2).
                let status = value.iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
                inbox.events.push(Event::Status { slot, id, status });
            }
            b"server" if inbox.want_server && inbox.server.is_none() => {
                inbox.server = Some(String::from_utf8_lossy(value).into_owned());
            }
            _ => {}
        }
    }
    0
}

unsafe extern "C" fn on_frame_recv(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a valid frame (the union member its type
    // names) and our inbox.
    unsafe {
        let hd = (*frame).hd;
        let inbox = inbox(user_data);
        let stream = slot(session, hd.stream_id).map(|s| (s, hd.stream_id));
        match u32::from(hd.type_) {
            ng::NGHTTP2_SETTINGS => inbox.events.push(Event::Settings),
            ng::NGHTTP2_GOAWAY => {
                let g = (*frame).goaway;
                inbox.events.push(Event::GoAway { last_stream: g.last_stream_id, code: g.error_code });
            }
            ng::NGHTTP2_RST_STREAM => inbox.events.push(Event::Reset),
            ng::NGHTTP2_HEADERS => {
                if let Some((slot, id)) = stream {
                    inbox.events.push(Event::HeadBytes { slot, id, n: hd.length as u64 + 9 });
                }
            }
            _ => {}
        }
        if let Some((slot, id)) = stream {
            let ends = u32::from(hd.flags) & ng::NGHTTP2_FLAG_END_STREAM != 0;
            let data_or_head = matches!(u32::from(hd.type_), ng::NGHTTP2_DATA | ng::NGHTTP2_HEADERS);
            if ends && data_or_head {
                inbox.events.push(Event::End { slot, id });
            }
        }
    }
    0
}

unsafe extern "C" fn on_data_chunk(
    session: *mut ng::nghttp2_session,
    _flags: u8,
    id: i32,
    _data: *const u8,
    len: usize,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        if let Some(slot) = slot(session, id) {
            inbox(user_data).events.push(Event::Body { slot, id, n: len as u64 });
        }
    }
    0
}

unsafe extern "C" fn on_stream_close(
    session: *mut ng::nghttp2_session,
    id: i32,
    code: u32,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        if let Some(slot) = slot(session, id) {
            inbox(user_data).events.push(Event::Closed { slot, id, code });
        }
    }
    0
}

unsafe extern "C" fn on_frame_send(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        let hd = (*frame).hd;
        match u32::from(hd.type_) {
            ng::NGHTTP2_HEADERS => {
                if let Some(slot) = slot(session, hd.stream_id) {
                    inbox(user_data).events.push(Event::Sent { slot, id: hd.stream_id });
                }
            }
            // Only nghttp2 ends a session from this side: over the server's frames.
            ng::NGHTTP2_GOAWAY => {
                let code = (*frame).goaway.error_code;
                inbox(user_data)
                    .fault
                    .get_or_insert_with(|| format!("the client ended the session ({})", h2_error(code)));
            }
            _ => {}
        }
    }
    0
}

unsafe extern "C" fn on_error(
    _session: *mut ng::nghttp2_session,
    _code: c_int,
    msg: *const std::ffi::c_char,
    len: usize,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes `len` bytes of message and our inbox.
    unsafe {
        let msg = std::slice::from_raw_parts(msg.cast::<u8>(), len);
        inbox(user_data).fault = Some(String::from_utf8_lossy(msg).into_owned());
    }
    0
}

unsafe extern "C" fn read_body(
    _session: *mut ng::nghttp2_session,
    _id: i32,
    buf: *mut u8,
    length: usize,
    flags: *mut u32,
    source: *mut ng::nghttp2_data_source,
    _user_data: *mut c_void,
) -> ng::nghttp2_ssize {
    // SAFETY: `source` holds the cursor `submit` gave, which lives in the
    // inbox; its bytes live in the driver's request list; `buf` has room
    // for `length` bytes.
    unsafe {
        let b = &mut *(*source).ptr.cast::<BodyCursor>();
        let n = (b.len - b.at).min(length);
        ptr::copy_nonoverlapping(b.data.add(b.at), buf, n);
        b.at += n;
        if b.at == b.len {
            *flags |= ng::NGHTTP2_DATA_FLAG_EOF;
        }
        n as ng::nghttp2_ssize
    }
}
