//! nghttp2 sessions (RFC 9113) driven through memory: the caller reads and
//! writes the socket, feeds the session what arrived (`receive`) and takes
//! what it has to send (`send`); what happens to each stream comes back
//! through the callbacks in `Handlers`. The load engine's client and the
//! built-in server share this; each keeps its own callbacks.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;

pub use libnghttp2_sys as sys;

/// The callbacks a session calls; those left `None` are not set.
#[derive(Default)]
pub struct Handlers {
    pub on_begin_headers: sys::nghttp2_on_begin_headers_callback,
    pub on_header: sys::nghttp2_on_header_callback,
    pub on_frame_recv: sys::nghttp2_on_frame_recv_callback,
    pub on_data_chunk_recv: sys::nghttp2_on_data_chunk_recv_callback,
    pub on_stream_close: sys::nghttp2_on_stream_close_callback,
    pub on_frame_send: sys::nghttp2_on_frame_send_callback,
    pub on_error: sys::nghttp2_error_callback2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// One session; freed on drop.
pub struct Session {
    raw: *mut sys::nghttp2_session,
}

// SAFETY: a session is used by one thread at a time (its connection's);
// nghttp2 keeps no thread-local state.
unsafe impl Send for Session {}

/// nghttp2's words for a library error code.
pub fn lib_error(code: isize) -> String {
    // SAFETY: nghttp2_strerror returns a static NUL-terminated string for any code.
    unsafe { CStr::from_ptr(sys::nghttp2_strerror(code as c_int)) }.to_string_lossy().into_owned()
}

/// RFC 9113's name for an HTTP/2 error code (§7).
pub fn h2_error(code: u32) -> String {
    // SAFETY: as for nghttp2_strerror; unknown codes give "unknown".
    unsafe { CStr::from_ptr(sys::nghttp2_http2_strerror(code)) }.to_string_lossy().into_owned()
}

/// A header field pointing at `name` and `value` (nghttp2 copies both
/// when a request or response is submitted).
pub fn field(name: &[u8], value: &[u8]) -> sys::nghttp2_nv {
    sys::nghttp2_nv {
        name: name.as_ptr().cast_mut(),
        value: value.as_ptr().cast_mut(),
        namelen: name.len(),
        valuelen: value.len(),
        flags: sys::NGHTTP2_NV_FLAG_NONE as u8,
    }
}

impl Session {
    /// A session on `side` whose callbacks get `user_data`, with `settings`
    /// (id, value) queued to send.
    ///
    /// # Safety
    /// `user_data` must stay valid, and not move, for the session's life:
    /// the callbacks receive it.
    pub unsafe fn new(
        side: Side,
        handlers: &Handlers,
        user_data: *mut c_void,
        settings: &[(u32, u32)],
    ) -> Result<Session, String> {
        let mut raw = ptr::null_mut();
        // SAFETY: the callbacks object is created, filled and freed here; the
        // session copies it.
        let rv = unsafe {
            let mut cbs = ptr::null_mut();
            if sys::nghttp2_session_callbacks_new(&mut cbs) != 0 {
                return Err("out of memory".into());
            }
            sys::nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, handlers.on_begin_headers);
            sys::nghttp2_session_callbacks_set_on_header_callback(cbs, handlers.on_header);
            sys::nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, handlers.on_frame_recv);
            sys::nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, handlers.on_data_chunk_recv);
            sys::nghttp2_session_callbacks_set_on_stream_close_callback(cbs, handlers.on_stream_close);
            sys::nghttp2_session_callbacks_set_on_frame_send_callback(cbs, handlers.on_frame_send);
            sys::nghttp2_session_callbacks_set_error_callback2(cbs, handlers.on_error);
            let rv = match side {
                Side::Client => sys::nghttp2_session_client_new(&mut raw, cbs, user_data),
                Side::Server => sys::nghttp2_session_server_new(&mut raw, cbs, user_data),
            };
            sys::nghttp2_session_callbacks_del(cbs);
            rv
        };
        if rv != 0 {
            return Err(lib_error(rv as isize));
        }
        let s = Session { raw };
        let entries: Vec<sys::nghttp2_settings_entry> =
            settings.iter().map(|&(id, value)| sys::nghttp2_settings_entry { settings_id: id as i32, value }).collect();
        // SAFETY: a live session; the entries are copied.
        match unsafe { sys::nghttp2_submit_settings(s.raw, 0, entries.as_ptr(), entries.len()) } {
            0 => Ok(s),
            e => Err(lib_error(e as isize)),
        }
    }

    /// The session, for the calls this wrapper does not make.
    pub fn raw(&self) -> *mut sys::nghttp2_session {
        self.raw
    }

    /// Feeds bytes the peer sent; Err when they are not valid HTTP/2 (or a
    /// flood nghttp2 refuses): the connection cannot go on.
    pub fn receive(&mut self, data: &[u8]) -> Result<(), String> {
        // SAFETY: a live session and a valid slice.
        match unsafe { sys::nghttp2_session_mem_recv2(self.raw, data.as_ptr(), data.len()) } {
            n if n < 0 => Err(lib_error(n)),
            _ => Ok(()),
        }
    }

    /// Appends what the session has to send to `out`.
    pub fn send(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        loop {
            let mut at = ptr::null();
            // SAFETY: a live session; the returned bytes stay valid until the
            // next call into it, and are copied before then.
            let n = unsafe { sys::nghttp2_session_mem_send2(self.raw, &mut at) };
            match n {
                0 => return Ok(()),
                n if n < 0 => return Err(lib_error(n)),
                n => out.extend_from_slice(unsafe { std::slice::from_raw_parts(at, n as usize) }),
            }
        }
    }

    /// False once the session has nothing more to do (GOAWAY both ways with
    /// no stream open, or a fatal error).
    pub fn alive(&self) -> bool {
        // SAFETY: a live session.
        unsafe { sys::nghttp2_session_want_read(self.raw) != 0 || sys::nghttp2_session_want_write(self.raw) != 0 }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: freed once, here.
        unsafe { sys::nghttp2_session_del(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_and_a_server_talk_through_memory() {
        let handlers = Handlers::default();
        let settings = [(sys::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 7)];
        // SAFETY: no callbacks, so the null user data is never read.
        let mut client = unsafe { Session::new(Side::Client, &handlers, ptr::null_mut(), &[]) }.unwrap();
        let mut server = unsafe { Session::new(Side::Server, &handlers, ptr::null_mut(), &settings) }.unwrap();
        let (mut to_server, mut to_client) = (Vec::new(), Vec::new());
        client.send(&mut to_server).unwrap();
        assert!(to_server.starts_with(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
        server.receive(&to_server).unwrap();
        server.send(&mut to_client).unwrap();
        client.receive(&to_client).unwrap();
        // SAFETY: a live session.
        let max = unsafe {
            sys::nghttp2_session_get_remote_settings(client.raw(), sys::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        };
        assert_eq!(max, 7);
        assert!(client.alive() && server.alive());
        assert_eq!(h2_error(8), "CANCEL");
    }
}
