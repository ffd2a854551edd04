//! HTTP/2 for the built-in server (RFC 9113): nghttp2's server session,
//! driven through memory as the load engine drives its client sessions.
//! h2c with prior knowledge: a connection whose first bytes are the HTTP/2
//! preface speaks HTTP/2, any other HTTP/1.x, on the same port.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::ptr;

use libnghttp2_sys as ng;

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
    raw: *mut ng::nghttp2_session,
    inbox: Box<Inbox>,
}

// SAFETY: a session is used by one thread at a time (its connection's);
// nghttp2 keeps no thread-local state.
unsafe impl Send for Connection {}

impl Connection {
    pub(crate) fn new() -> Result<Connection, String> {
        let mut inbox = Box::new(Inbox { arriving: HashMap::new(), ready: Vec::new(), sending: HashMap::new() });
        let mut raw = ptr::null_mut();
        // SAFETY: the callbacks are set on a fresh object the session copies;
        // the boxed inbox outlives the session (see Drop) and never moves.
        let rv = unsafe {
            let mut cbs = ptr::null_mut();
            if ng::nghttp2_session_callbacks_new(&mut cbs) != 0 {
                return Err("out of memory".into());
            }
            ng::nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, Some(on_begin_headers));
            ng::nghttp2_session_callbacks_set_on_header_callback(cbs, Some(on_header));
            ng::nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, Some(on_frame_recv));
            ng::nghttp2_session_callbacks_set_on_stream_close_callback(cbs, Some(on_stream_close));
            let rv = ng::nghttp2_session_server_new(&mut raw, cbs, (&mut *inbox as *mut Inbox).cast());
            ng::nghttp2_session_callbacks_del(cbs);
            rv
        };
        if rv != 0 {
            return Err(format!("nghttp2 error {rv}"));
        }
        let c = Connection { raw, inbox };
        let settings = [ng::nghttp2_settings_entry {
            settings_id: ng::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS as i32,
            value: MAX_STREAMS,
        }];
        // SAFETY: a live session; the entries are copied.
        match unsafe { ng::nghttp2_submit_settings(c.raw, 0, settings.as_ptr(), settings.len()) } {
            0 => Ok(c),
            rv => Err(format!("nghttp2 error {rv}")),
        }
    }

    /// Feeds what the client sent; Err when it is not valid HTTP/2 (the
    /// session has queued its GOAWAY: send it, then close).
    pub(crate) fn receive(&mut self, data: &[u8]) -> Result<(), ()> {
        // SAFETY: a live session and a valid slice.
        match unsafe { ng::nghttp2_session_mem_recv2(self.raw, data.as_ptr(), data.len()) } {
            n if n < 0 => Err(()),
            _ => Ok(()),
        }
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
        let field = |name: &'static [u8], value: &[u8]| ng::nghttp2_nv {
            name: name.as_ptr().cast_mut(),
            value: value.as_ptr().cast_mut(),
            namelen: name.len(),
            valuelen: value.len(),
            flags: ng::NGHTTP2_NV_FLAG_NONE as u8,
        };
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
        unsafe { ng::nghttp2_submit_response2(self.raw, stream, nva.as_ptr(), nva.len(), data) };
    }

    /// Appends what the session has to send to `out`.
    pub(crate) fn send(&mut self, out: &mut Vec<u8>) -> Result<(), ()> {
        loop {
            let mut at = ptr::null();
            // SAFETY: a live session; the bytes are copied before the next call.
            let n = unsafe { ng::nghttp2_session_mem_send2(self.raw, &mut at) };
            match n {
                0 => return Ok(()),
                n if n < 0 => return Err(()),
                n => out.extend_from_slice(unsafe { std::slice::from_raw_parts(at, n as usize) }),
            }
        }
    }

    /// False once the session is over (GOAWAY sent or received, nothing open).
    pub(crate) fn alive(&self) -> bool {
        // SAFETY: a live session.
        unsafe { ng::nghttp2_session_want_read(self.raw) != 0 || ng::nghttp2_session_want_write(self.raw) != 0 }
    }

    /// Streams whose response is not fully queued yet.
    pub(crate) fn busy(&self) -> bool {
        !self.inbox.arriving.is_empty() || !self.inbox.sending.is_empty()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: freed once; the inbox goes after it.
        unsafe { ng::nghttp2_session_del(self.raw) };
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
