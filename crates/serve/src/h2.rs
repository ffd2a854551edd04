//! HTTP/2 for the built-in server (RFC 9113): nghttp2's server session,
//! driven through memory as the load engine drives its client sessions.
//! h2c with prior knowledge: a connection whose first bytes are the HTTP/2
//! preface speaks HTTP/2, any other HTTP/1.x, on the same port.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::ptr;

use corebench_nghttp2::sys as ng;
use corebench_nghttp2::{field, Handlers, Side};

use super::http::{Body, Response};

/// The client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Streams a client may have open at once on a connection (nginx's
/// `http2_max_concurrent_streams` default).
const MAX_STREAMS: u32 = 128;

/// What a connection's first bytes say: HTTP/2, HTTP/1.x, or not yet known.
pub(crate) fn speaks_h2(first: &[u8]) -> Option<bool> {
    let n = first.len().min(PREFACE.len());
    match (first[..n] == PREFACE[..n], n == PREFACE.len()) {
        (false, _) => Some(false),
        (true, true) => Some(true),
        (true, false) => None,
    }
}

/// A request whose END_STREAM arrived: to be answered on `stream`.
#[derive(Debug, Default)]
pub(crate) struct Request {
    pub stream: i32,
    pub method: Vec<u8>,
    pub target: Vec<u8>,
    pub user_agent: Option<Vec<u8>>,
    pub referer: Option<Vec<u8>>,
}

struct Inbox {
    /// Requests whose head is arriving, by stream.
    arriving: HashMap<i32, Request>,
    ready: Vec<Request>,
    /// Response bodies being sent, and how far.
    sending: HashMap<i32, (Body, usize)>,
}

pub(crate) struct Connection {
    // Before `inbox` (fields drop in order): the session, which holds the
    // inbox's address, goes first.
    session: corebench_nghttp2::Session,
    inbox: Box<Inbox>,
}

impl Connection {
    pub(crate) fn new() -> Result<Connection, String> {
        let mut inbox = Box::new(Inbox { arriving: HashMap::new(), ready: Vec::new(), sending: HashMap::new() });
        let handlers = Handlers {
            on_begin_headers: Some(on_begin_headers),
            on_header: Some(on_header),
            on_frame_recv: Some(on_frame_recv),
            on_stream_close: Some(on_stream_close),
            ..Handlers::default()
        };
        let settings = [(ng::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS)];
        let user_data = (&mut *inbox as *mut Inbox).cast();
        // SAFETY: the inbox is boxed (it never moves) and outlives the
        // session (see the field order of `Connection`).
        let session = unsafe { corebench_nghttp2::Session::new(Side::Server, &handlers, user_data, &settings)? };
        Ok(Connection { session, inbox })
    }

    /// Feeds what the client sent; Err when it is not valid HTTP/2 (the
    /// session has queued its GOAWAY: send it, then close).
    pub(crate) fn receive(&mut self, data: &[u8]) -> Result<(), String> {
        self.session.receive(data)
    }

    /// The requests complete since the last call.
    pub(crate) fn ready(&mut self) -> std::vec::Drain<'_, Request> {
        self.inbox.ready.drain(..)
    }

    /// Queues `response` on `stream`; a HEAD response keeps the length of
    /// the body it does not send (RFC 9110 §9.3.2).
    pub(crate) fn respond(&mut self, stream: i32, response: Response, head: bool) {
        let status = response.status.to_string();
        let length = response.body.bytes().len().to_string();
        let server = concat!("corebench/", env!("CARGO_PKG_VERSION"));
        let nva = [
            field(b":status", status.as_bytes()),
            field(b"server", server.as_bytes()),
            field(b"content-type", response.content_type.as_bytes()),
            field(b"content-length", length.as_bytes()),
        ];
        let provider = ng::nghttp2_data_provider2 {
            source: ng::nghttp2_data_source { ptr: ptr::null_mut() },
            read_callback: Some(read_body),
        };
        let data = match head || response.body.bytes().is_empty() {
            true => ptr::null(),
            false => {
                self.inbox.sending.insert(stream, (response.body, 0));
                &provider as *const ng::nghttp2_data_provider2
            }
        };
        // SAFETY: a live session; the fields are copied before it returns;
        // the body stays in the inbox until its stream closes.
        unsafe { ng::nghttp2_submit_response2(self.session.raw(), stream, nva.as_ptr(), nva.len(), data) };
    }

    /// Appends what the session has to send to `out`.
    pub(crate) fn send(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        self.session.send(out)
    }

    /// False once the session is over (GOAWAY sent or received, nothing open).
    pub(crate) fn alive(&self) -> bool {
        self.session.alive()
    }

    /// Streams whose response is not fully queued yet.
    pub(crate) fn busy(&self) -> bool {
        !self.inbox.arriving.is_empty() || !self.inbox.sending.is_empty()
    }
}

/// SAFETY: `user_data` is the session's boxed inbox.
unsafe fn inbox<'a>(user_data: *mut c_void) -> &'a mut Inbox {
    unsafe { &mut *user_data.cast::<Inbox>() }
}

unsafe extern "C" fn on_begin_headers(
    _session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a valid frame and our inbox.
    unsafe {
        let hd = (*frame).hd;
        if u32::from(hd.type_) == ng::NGHTTP2_HEADERS {
            inbox(user_data)
                .arriving
                .entry(hd.stream_id)
                .or_insert_with(|| Request { stream: hd.stream_id, ..Request::default() });
        }
    }
    0
}

unsafe extern "C" fn on_header(
    _session: *mut ng::nghttp2_session,
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
        let Some(r) = inbox(user_data).arriving.get_mut(&(*frame).hd.stream_id) else { return 0 };
        let value = std::slice::from_raw_parts(value, valuelen).to_vec();
        match std::slice::from_raw_parts(name, namelen) {
            b":method" => r.method = value,
            b":path" => r.target = value,
            b"user-agent" => r.user_agent = Some(value),
            b"referer" => r.referer = Some(value),
            _ => {}
        }
    }
    0
}

unsafe extern "C" fn on_frame_recv(
    _session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        let hd = (*frame).hd;
        let ends = u32::from(hd.flags) & ng::NGHTTP2_FLAG_END_STREAM != 0;
        if ends && matches!(u32::from(hd.type_), ng::NGHTTP2_HEADERS | ng::NGHTTP2_DATA) {
            let inbox = inbox(user_data);
            if let Some(r) = inbox.arriving.remove(&hd.stream_id) {
                inbox.ready.push(r);
            }
        }
    }
    0
}

unsafe extern "C" fn on_stream_close(
    _session: *mut ng::nghttp2_session,
    id: i32,
    _code: u32,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        let inbox = inbox(user_data);
        inbox.arriving.remove(&id);
        inbox.sending.remove(&id);
    }
    0
}

unsafe extern "C" fn read_body(
    _session: *mut ng::nghttp2_session,
    id: i32,
    buf: *mut u8,
    length: usize,
    flags: *mut u32,
    _source: *mut ng::nghttp2_data_source,
    user_data: *mut c_void,
) -> ng::nghttp2_ssize {
    // SAFETY: `buf` has room for `length` bytes; the body is in the inbox.
    unsafe {
        let Some((body, at)) = inbox(user_data).sending.get_mut(&id) else {
            *flags |= ng::NGHTTP2_DATA_FLAG_EOF;
            return 0;
        };
        let bytes = body.bytes();
        let n = (bytes.len() - *at).min(length);
        ptr::copy_nonoverlapping(bytes.as_ptr().add(*at), buf, n);
        *at += n;
        if *at == bytes.len() {
            *flags |= ng::NGHTTP2_DATA_FLAG_EOF;
        }
        n as ng::nghttp2_ssize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preface_tells_the_protocols_apart() {
        assert_eq!(speaks_h2(b"GET / HTTP/1.1\r\n"), Some(false));
        assert_eq!(speaks_h2(b"PRI * HTTP/2.0\r\n"), None);
        assert_eq!(speaks_h2(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00"), Some(true));
        assert_eq!(speaks_h2(b"PRI * HTTP/1.1\r\n"), Some(false));
        assert_eq!(speaks_h2(b""), None);
    }
}
