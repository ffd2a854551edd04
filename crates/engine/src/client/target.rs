//! Where the load goes: the parsed URL and the resolved address; and the
//! request bytes, built once per URL and written unchanged for every request.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use crate::config::{bad, HttpVersion, LoadConfig};
use crate::error::{EngineError, Result};

#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub host: String,
    pub port: u16,
    pub path: String,
    pub tls: bool,
    /// Where connections go: the target's address, or the proxy's.
    pub addr: SocketAddr,
    /// The Host header: the URL's host, and its port when the URL names one.
    pub host_header: String,
}

pub(crate) fn parse_url(raw: &str) -> Result<url::Url> {
    // The URL standard drops every tab, CR and LF and trims controls and
    // spaces at either end: the request would go to another URL than the
    // one given, so such a URL is refused rather than silently changed.
    if raw.contains(['\t', '\r', '\n']) {
        let reason = "it holds a tab, CR or LF, which URL parsing drops: percent-encode it (%09, %0D, %0A)";
        return Err(EngineError::BadUrl { url: raw.into(), reason: reason.into() });
    }
    if raw.starts_with(|c: char| c <= ' ') || raw.ends_with(|c: char| c <= ' ') {
        let reason = "it starts or ends with a space or a control character, which URL parsing trims";
        return Err(EngineError::BadUrl { url: raw.into(), reason: reason.into() });
    }
    let u = url::Url::parse(raw).map_err(|e| EngineError::BadUrl { url: raw.into(), reason: e.to_string() })?;
    match u.scheme() {
        "http" | "https" => {}
        s => return Err(EngineError::BadScheme { url: raw.into(), scheme: s.into() }),
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err(EngineError::BadUrl { url: raw.into(), reason: "no host".into() });
    }
    Ok(u)
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Resolves once, before any load. IPv4 is preferred when a name has both
/// families, because servers on loopback most often listen on 127.0.0.1 only.
fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (bare, port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve { host: host.into(), reason: e.to_string() })?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| EngineError::Resolve { host: host.into(), reason: "no address".into() })
}

impl Target {
    pub(crate) fn from_config(cfg: &LoadConfig) -> Result<Target> {
        let u = parse_url(&cfg.url)?;
        let tls = u.scheme() == "https";
        let host = u.host_str().unwrap_or_default().to_string();
        let port = u.port_or_known_default().unwrap_or(if tls { 443 } else { 80 });
        let path = request_target(&u);
        let mut addr = resolve(&host, port)?;
        if !cfg.allow_remote && !is_loopback(addr.ip()) {
            return Err(EngineError::NotLoopback { host, addr: addr.ip() });
        }
        if let Some(proxy) = &cfg.proxy {
            if tls {
                return Err(bad(
                    "proxy",
                    "an https:// URL through a proxy needs a CONNECT tunnel, which corebench (like ab) does not \
                     make: load the https:// server directly, or give an http:// URL",
                ));
            }
            addr = proxy_address(proxy)?;
        }
        let host_header = match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        Ok(Target { host, port, path, tls, addr, host_header })
    }

    /// True when `u` names this target's scheme, host and port.
    pub(crate) fn same_origin(&self, u: &url::Url) -> bool {
        (u.scheme() == "https") == self.tls
            && u.host_str() == Some(self.host.as_str())
            && u.port_or_known_default() == Some(self.port)
    }
}

/// The address of a proxy given as `HOST:PORT` (`[V6]:PORT`, or `HOST`
/// for port 80, as ab's -X): only a loopback address, whatever
/// `allow_remote` says, since the load would leave this machine through it.
fn proxy_address(proxy: &str) -> Result<SocketAddr> {
    let (host, port) = match proxy.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && (!h.contains(':') || h.ends_with(']')) => {
            let port = p.parse::<u16>().ok().filter(|&p| p > 0);
            (h, port.ok_or_else(|| bad("proxy", format!("{proxy:?}: the port {p:?} is not from 1 to 65535")))?)
        }
        _ => (proxy, 80),
    };
    if host.is_empty() {
        return Err(bad("proxy", format!("{proxy:?}: give HOST:PORT, like 127.0.0.1:3128")));
    }
    let addr = resolve(host, port).map_err(|e| bad("proxy", format!("{proxy:?}: {e}")))?;
    if !is_loopback(addr.ip()) {
        return Err(bad(
            "proxy",
            format!(
                "{proxy:?} is not on a loopback address ({}): corebench sends load only to this machine, so give a \
                 proxy on 127.0.0.1, ::1 or localhost",
                addr.ip()
            ),
        ));
    }
    Ok(addr)
}

/// The path and query of a URL, as a request target.
pub(crate) fn request_target(u: &url::Url) -> String {
    let mut path = u.path().to_string();
    if let Some(q) = u.query() {
        path.push('?');
        path.push_str(q);
    }
    path
}

/// `build_request_into` a buffer of its own.
#[cfg(test)]
pub(crate) fn build_request(cfg: &LoadConfig, method: &str, path: &str, host_header: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    build_request_into(&mut bytes, cfg, method, path, host_header, body);
    bytes
}

/// The bytes of one request, appended to `out`: the config's headers and
/// defaults with this method, target and body.
pub(crate) fn build_request_into(
    out: &mut Vec<u8>,
    cfg: &LoadConfig,
    method: &str,
    path: &str,
    host_header: &str,
    body: &[u8],
) {
    let version = match cfg.http_version {
        HttpVersion::Http10 => "HTTP/1.0",
        // HTTP/2 restates this request's head as its own fields (client::h2).
        HttpVersion::Http11 | HttpVersion::Http2 => "HTTP/1.1",
    };
    let has = |name: &str| cfg.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    // Through a proxy the target is the absolute URL (RFC 9112 §3.2.2), as ab sends it.
    let mut r = match &cfg.proxy {
        Some(_) => format!("{method} http://{host_header}{path} {version}\r\n"),
        None => format!("{method} {path} {version}\r\n"),
    };
    let mut add = |name: &str, value: &str| {
        if !has(name) {
            r.push_str(&format!("{name}: {value}\r\n"));
        }
    };
    add("Host", host_header);
    add("User-Agent", &cfg.user_agent);
    add("Accept", "*/*");
    match (cfg.keep_alive, cfg.http_version) {
        (true, HttpVersion::Http10) => add("Connection", "keep-alive"),
        (false, HttpVersion::Http11) => add("Connection", "close"),
        _ => {}
    }
    if !body.is_empty() || cfg.content_type.is_some() {
        add("Content-Type", cfg.content_type.as_deref().unwrap_or("text/plain"));
        add("Content-Length", &body.len().to_string());
    } else if !matches!(method, "GET" | "HEAD" | "DELETE" | "OPTIONS" | "TRACE" | "CONNECT") {
        // RFC 9110 §8.6: a POST or PUT without a body says so, or the
        // server waits for one.
        add("Content-Length", "0");
    }
    for (n, v) in &cfg.headers {
        r.push_str(&format!("{n}: {v}\r\n"));
    }
    r.push_str("\r\n");
    out.extend_from_slice(r.as_bytes());
    out.extend_from_slice(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(url: &str) -> LoadConfig {
        LoadConfig { url: url.into(), ..Default::default() }
    }

    fn request(c: &LoadConfig) -> String {
        let t = Target::from_config(c).unwrap();
        String::from_utf8(build_request(c, &c.method, &t.path, &t.host_header, &c.body)).unwrap()
    }

    #[test]
    fn builds_ab_like_request() {
        let text = request(&cfg("http://127.0.0.1:8080/a?b=1"));
        assert!(text.starts_with("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"), "{text}");
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
    }

    #[test]
    fn user_headers_replace_defaults() {
        let mut c = cfg("http://localhost/");
        c.headers.push(("Host".into(), "example.test".into()));
        c.keep_alive = true;
        let text = request(&c);
        assert_eq!(text.matches("Host:").count(), 1);
        assert!(text.contains("Host: example.test\r\n"));
        assert!(!text.contains("Connection:"));
    }

    #[test]
    fn body_gets_length_and_type() {
        let mut c = cfg("http://127.0.0.1/");
        c.method = "POST".into();
        c.body = b"x=1".to_vec();
        c.content_type = Some("application/x-www-form-urlencoded".into());
        let text = request(&c);
        assert!(text.contains("Content-Length: 3\r\n") && text.ends_with("\r\n\r\nx=1"));
    }

    #[test]
    fn a_proxy_gets_the_absolute_url_and_must_be_on_loopback() {
        let mut c = cfg("http://127.0.0.1:8080/a?b=1");
        c.proxy = Some("127.0.0.1:3128".into());
        let t = Target::from_config(&c).unwrap();
        assert_eq!(t.addr, "127.0.0.1:3128".parse().unwrap());
        let text = request(&c);
        assert!(text.starts_with("GET http://127.0.0.1:8080/a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"), "{text}");
        c.proxy = Some("localhost".into());
        assert_eq!(Target::from_config(&c).unwrap().addr.port(), 80);
        c.proxy = Some("[::1]:3128".into());
        assert_eq!(Target::from_config(&c).unwrap().addr, "[::1]:3128".parse().unwrap());
        for bad in ["192.0.2.1:3128", "127.0.0.1:0", "127.0.0.1:http", ":3128"] {
            c.proxy = Some(bad.into());
            let err = Target::from_config(&c).unwrap_err();
            assert!(matches!(err, EngineError::BadConfig { key: "proxy", .. }), "{bad}: {err}");
        }
        c.allow_remote = true;
        c.proxy = Some("192.0.2.1:3128".into());
        assert!(Target::from_config(&c).unwrap_err().to_string().contains("not on a loopback address"));
        let mut c = cfg("https://127.0.0.1/");
        c.proxy = Some("127.0.0.1:3128".into());
        assert!(Target::from_config(&c).unwrap_err().to_string().contains("CONNECT"));
    }

    #[test]
    fn rejects_bad_urls_and_remote_hosts() {
        assert!(matches!(parse_url("127.0.0.1:80"), Err(EngineError::BadUrl { .. })));
        assert!(matches!(parse_url("ftp://127.0.0.1/"), Err(EngineError::BadScheme { .. })));
        assert!(matches!(parse_url("http://"), Err(EngineError::BadUrl { .. })));
        for changed in
            ["http://127.0.0.1/a\r\nb", "http://127.0.0.1/a\tb", "http://127.0.0.1/ ", "\x01http://127.0.0.1/"]
        {
            assert!(matches!(parse_url(changed), Err(EngineError::BadUrl { .. })), "{changed:?}");
        }
        assert_eq!(parse_url("http://127.0.0.1/a%0D%0Ab").unwrap().path(), "/a%0D%0Ab");
        let err = Target::from_config(&cfg("http://192.0.2.1/")).unwrap_err();
        assert!(matches!(err, EngineError::NotLoopback { .. }));
        assert!(matches!(Target::from_config(&cfg("http://no-such-host.invalid/")), Err(EngineError::Resolve { .. })));
    }
}

/// One request of the sequence: which prepared request, and the status the
/// access log recorded for it (0 when there is no log).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Entry {
    pub request: u32,
    pub status: u16,
}
