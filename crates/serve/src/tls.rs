//! HTTPS for the built-in server (`--tls`): a self-signed certificate made
//! at start (rcgen), so tests and examples need no files, and rustls driven
//! by hand over the connection's socket, blocking (prefork, threads) or not
//! (async). ALPN offers h2 and http/1.1; an h2 client then sends the HTTP/2
//! preface inside TLS, which tells the protocols apart as in the clear.

use std::io::{self, Read, Write};
use std::sync::Arc;

use rustls::ServerConnection;

/// The names the certificate is for.
const NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

/// A server configuration with a fresh self-signed certificate.
pub(crate) fn server_config() -> Result<Arc<rustls::ServerConfig>, String> {
    let made = rcgen::generate_simple_self_signed(NAMES.map(String::from).to_vec()).map_err(|e| e.to_string())?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A connection's byte stream: the socket itself, or TLS over it. Reads and
/// writes are plaintext; on a non-blocking socket they end in WouldBlock as
/// the socket's own do.
pub(crate) enum Wire<S: Read + Write> {
    Plain(S),
    Tls(Box<(S, ServerConnection)>),
}

impl<S: Read + Write> Wire<S> {
    pub(crate) fn new(sock: S, tls: Option<&Arc<rustls::ServerConfig>>) -> io::Result<Wire<S>> {
        Ok(match tls {
            None => Wire::Plain(sock),
            Some(config) => {
                let conn = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
                Wire::Tls(Box::new((sock, conn)))
            }
        })
    }

    pub(crate) fn socket(&mut self) -> &mut S {
        match self {
            Wire::Plain(s) => s,
            Wire::Tls(b) => &mut b.0,
        }
    }

    /// Writes the TLS records queued (handshake, responses); Ok(true) when
    /// all went out.
    pub(crate) fn flush_tls(&mut self) -> io::Result<bool> {
        match self {
            Wire::Plain(_) => Ok(true),
            Wire::Tls(b) => write_pending(&mut b.0, &mut b.1),
        }
    }
}

fn write_pending<S: Write>(sock: &mut S, conn: &mut ServerConnection) -> io::Result<bool> {
    while conn.wants_write() {
        match conn.write_tls(sock) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

impl<S: Read + Write> Read for Wire<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (sock, conn) = match self {
            Wire::Plain(s) => return s.read(buf),
            Wire::Tls(b) => {
                let (sock, conn) = &mut **b;
                (sock, conn)
            }
        };
        loop {
            match conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                // No plaintext yet: read records (WouldBlock, when there are
                // none, is the caller's as the socket's own would be).
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if conn.read_tls(sock)? == 0 {
                return Ok(0);
            }
            let processed = conn.process_new_packets();
            // The handshake's answers, or the alert of a failure, go out now.
            write_pending(sock, conn)?;
            processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
    }
}

impl<S: Read + Write> Write for Wire<S> {
    /// Plaintext is taken whole (rustls queues its records) and written as
    /// far as the socket allows; `flush_tls` writes the rest when it can.
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(s) => s.write(data),
            Wire::Tls(b) => {
                let n = b.1.writer().write(data)?;
                self.flush_tls()?;
                Ok(n)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Wire::Plain(s) => s.flush(),
            Wire::Tls(_) => self.flush_tls().map(|_| ()),
        }
    }
}
