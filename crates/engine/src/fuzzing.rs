//! The response parser as the fuzz targets in `fuzz/` drive it (cargo
//! feature `fuzzing`, off in every build of corebench itself): a thin
//! wrapper over `client::response::ResponseParser`, the parser each
//! connection slot feeds on the hot path, so that none of its items has
//! to become public.

use crate::client::response;

/// What one `feed` made of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    NeedMore,
    /// The response ended after this many bytes of the piece fed.
    Complete(usize),
}

/// The incremental HTTP/1.x response parser, as a connection slot uses it.
#[derive(Debug, Default)]
pub struct ResponseParser(response::ResponseParser);

impl ResponseParser {
    /// A parser for a connection's first response; `want_server` keeps the
    /// `Server` header, as the first response of a run does.
    pub fn new(want_server: bool) -> ResponseParser {
        let mut p = response::ResponseParser::default();
        p.want_server = want_server;
        ResponseParser(p)
    }

    /// Keeps the first final response's head as text, as a run does for
    /// ab's -v 2 and wrk's head printout.
    pub fn keep_head(&mut self) {
        self.0.want_head = true;
    }

    pub fn head_text(&self) -> Option<&str> {
        self.0.head_text.as_deref()
    }

    /// Feeds the next bytes read from the socket. The error is the message
    /// the run reports.
    pub fn feed(&mut self, data: &[u8], head_request: bool) -> Result<Progress, String> {
        match self.0.feed(data, head_request) {
            Ok(response::Progress::NeedMore) => Ok(Progress::NeedMore),
            Ok(response::Progress::Complete(n)) => Ok(Progress::Complete(n)),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Before the next request on the same connection.
    pub fn reset(&mut self) {
        self.0.reset();
    }

    pub fn started(&self) -> bool {
        self.0.started()
    }

    pub fn in_body(&self) -> bool {
        self.0.in_body()
    }

    pub fn finish_on_close(&mut self) -> bool {
        self.0.finish_on_close()
    }

    pub fn status(&self) -> u16 {
        self.0.status
    }

    pub fn header_bytes(&self) -> u64 {
        self.0.header_bytes
    }

    pub fn body_bytes(&self) -> u64 {
        self.0.body_bytes
    }

    pub fn reusable(&self) -> bool {
        self.0.reusable
    }

    pub fn server(&self) -> Option<&str> {
        self.0.server.as_deref()
    }
}
