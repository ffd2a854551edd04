//! A prepared HTTP/1.1 request restated as HTTP/2 fields (RFC 9113 §8.3):
//! the pseudo-headers from its request line and Host, its other headers
//! lower-cased, minus those HTTP/2 forbids (§8.2.2). Done once per distinct
//! request before the load, so both protocols send the same request.

use corebench_nghttp2::sys as ng;

pub(crate) struct H2Request {
    /// Names and values, each pair `(name, value)` as byte ranges of `text`.
    fields: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    text: Vec<u8>,
    body: Vec<u8>,
    /// The fields as nghttp2 takes them, pointing into `text` (whose bytes
    /// never move once built): made once, so a request costs no allocation.
    nva: Vec<ng::nghttp2_nv>,
}

// SAFETY: `nva` points into `text`, owned by the same value and never
// changed after `from_http1`; nothing else shares it.
unsafe impl Send for H2Request {}

/// Headers that belong to an HTTP/1.1 connection, not to the request.
const CONNECTION_SPECIFIC: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

impl H2Request {
    /// From the bytes of an HTTP/1.1 request as the workload built them.
    pub(crate) fn from_http1(bytes: &[u8], tls: bool) -> Result<H2Request, String> {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        let head = match req.parse(bytes) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Err("the request head is incomplete".into()),
            Err(e) => return Err(format!("the request head does not parse: {e}")),
        };
        let authority = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("host"))
            .map(|h| h.value.to_vec())
            .ok_or("the request has no Host")?;
        let mut r = H2Request { fields: Vec::new(), text: Vec::new(), body: bytes[head..].to_vec(), nva: Vec::new() };
        r.push(b":method", req.method.unwrap_or("GET").as_bytes());
        r.push(b":scheme", if tls { b"https" } else { b"http" });
        r.push(b":authority", &authority);
        r.push(b":path", req.path.unwrap_or("/").as_bytes());
        for h in req.headers.iter() {
            let name = h.name.to_ascii_lowercase();
            // TE may only say "trailers" (RFC 9113 §8.2.2).
            if CONNECTION_SPECIFIC.contains(&name.as_str()) || (name == "te" && h.value != b"trailers") {
                continue;
            }
            r.push(name.as_bytes(), h.value);
        }
        let base = r.text.as_mut_ptr();
        r.nva = r
            .fields
            .iter()
            .map(|(n, v)| ng::nghttp2_nv {
                name: base.wrapping_add(n.start),
                value: base.wrapping_add(v.start),
                namelen: n.len(),
                valuelen: v.len(),
                flags: ng::NGHTTP2_NV_FLAG_NONE as u8,
            })
            .collect();
        Ok(r)
    }

    fn push(&mut self, name: &[u8], value: &[u8]) {
        let n = self.text.len()..self.text.len() + name.len();
        self.text.extend_from_slice(name);
        let v = self.text.len()..self.text.len() + value.len();
        self.text.extend_from_slice(value);
        self.fields.push((n, v));
    }

    /// The fields as nghttp2 takes them (it copies them when a request is submitted).
    pub(crate) fn nv(&self) -> &[ng::nghttp2_nv] {
        &self.nva
    }

    pub(crate) fn body(&self) -> &[u8] {
        &self.body
    }

    /// The fields as text, `name: value` per line (ab's -v 2 over HTTP/2).
    pub(crate) fn describe(&self) -> String {
        let s = |r: &std::ops::Range<usize>| String::from_utf8_lossy(&self.text[r.clone()]).into_owned();
        self.fields.iter().map(|(n, v)| format!("{}: {}\n", s(n), s(v))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_request_becomes_pseudo_headers_without_connection_headers() {
        let bytes = b"POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: keep-alive\r\nUser-Agent: t\r\nContent-Length: 3\r\nTE: gzip\r\n\r\nx=1";
        let r = H2Request::from_http1(bytes, false).unwrap();
        assert_eq!(
            r.describe(),
            ":method: POST\n:scheme: http\n:authority: 127.0.0.1:8080\n:path: /a?b=1\nuser-agent: t\ncontent-length: 3\n"
        );
        assert_eq!(r.body(), b"x=1");
        assert_eq!(r.nv().len(), 6);
        assert!(H2Request::from_http1(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", true)
            .unwrap()
            .describe()
            .contains("https"));
    }

    #[test]
    fn a_request_without_host_is_refused() {
        assert!(H2Request::from_http1(b"GET / HTTP/1.0\r\n\r\n", false).is_err());
    }
}
