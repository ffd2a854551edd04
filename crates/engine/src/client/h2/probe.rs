//! Before an HTTP/2 load, one connection checks that the server speaks
//! HTTP/2 as asked, so that a server that does not is refused in one line
//! instead of measured as a run of protocol errors. A server that cannot be
//! reached or does not answer in time is not refused: the load measures it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::client::transport::TlsContext;

/// The client connection preface (RFC 9113 §3.4) and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
/// SETTINGS, the frame type a server's preface starts with.
const SETTINGS: u8 = 0x4;
/// The longest the check waits for each step.
const PATIENCE: Duration = Duration::from_secs(5);

/// Why the server at `addr` does not speak HTTP/2 as asked (prior knowledge
/// on plain TCP, ALPN with TLS), or None when it does or cannot be told.
pub(crate) fn refusal(addr: SocketAddr, tls: Option<&TlsContext>, timeout: Duration) -> Option<String> {
    let patience = timeout.min(PATIENCE);
    let sock = TcpStream::connect_timeout(&addr, patience).ok()?;
    sock.set_read_timeout(Some(patience)).ok()?;
    sock.set_write_timeout(Some(patience)).ok()?;
    match tls {
        Some(ctx) => refusal_over_tls(sock, ctx),
        None => refusal_in_clear(sock),
    }
}

fn refusal_in_clear(mut sock: TcpStream) -> Option<String> {
    sock.write_all(PREFACE).ok()?;
    let mut got = [0u8; 128];
    let mut n = 0;
    while n < 9 {
        match sock.read(&mut got[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            // A timeout or a reset: the load will say what it is.
            Err(_) if n == 0 => return None,
            Err(_) => break,
        }
    }
    let got = &got[..n];
    if got.len() >= 9 && got[3] == SETTINGS {
        return None;
    }
    if got.is_empty() {
        return Some("the server closed the connection at the HTTP/2 preface (prior knowledge, h2c)".into());
    }
    if got.starts_with(b"HTTP/") {
        let line = got.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        return Some(format!("the server answered the HTTP/2 preface in HTTP/1.x ({line:?}): it does not speak h2c"));
    }
    Some("the server's first bytes are not an HTTP/2 SETTINGS frame".into())
}

fn refusal_over_tls(sock: TcpStream, ctx: &TlsContext) -> Option<String> {
    let conn = rustls::ClientConnection::new(ctx.config.clone(), ctx.name.clone()).ok()?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    while tls.conn.is_handshaking() {
        if let Err(e) = tls.conn.complete_io(&mut tls.sock) {
            // A server that speaks no protocol offered says so (RFC 7301 §3.2);
            // any other handshake failure is the load's to measure.
            let alert = rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol);
            let refused = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) == Some(&alert);
            return refused.then(|| {
                "the server did not agree to HTTP/2 in the TLS handshake (ALPN offered h2 alone; it answered \
                 no_application_protocol)"
                    .into()
            });
        }
    }
    match tls.conn.alpn_protocol() {
        Some(b"h2") => None,
        Some(other) => Some(format!(
            "the server chose {:?} over HTTP/2 in the TLS handshake (ALPN offered h2 alone)",
            String::from_utf8_lossy(other)
        )),
        None => Some("the server did not agree to HTTP/2 in the TLS handshake (ALPN h2)".into()),
    }
}
