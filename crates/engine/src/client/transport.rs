//! A connection's byte stream: plain TCP, or TLS over it (rustls, driven by
//! hand over a non-blocking socket so one event loop serves both), or a
//! socket whose reads and writes io_uring makes.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::pki_types::ServerName;
use rustls::ClientConnection;

use super::stamp::{self, Stamp};

pub(crate) enum Transport {
    Plain(TcpStream),
    /// The socket, its TLS session, and the arrival stamp of the last
    /// record read (the plaintext read next came in it).
    Tls(Box<(TcpStream, ClientConnection, Option<Stamp>)>),
    Ring(RingSocket),
}

/// What a read found besides its bytes.
#[derive(Default)]
pub(crate) struct ReadNote {
    /// The socket was read to empty, so the edge-triggered poll will report
    /// the next arrival.
    pub drained: bool,
    /// When the bytes read reached the socket (see `stamp`).
    pub stamp: Option<Stamp>,
}

/// A socket read with its arrival stamps, for rustls to read records from.
struct Stamped<'a> {
    fd: RawFd,
    stamp: &'a mut Option<Stamp>,
}

impl Read for Stamped<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, stamp) = stamp::recv(self.fd, buf)?;
        if stamp.is_some() {
            *self.stamp = stamp;
        }
        Ok(n)
    }
}

/// A socket driven by io_uring. Closing it shuts it down first: a multishot
/// receive armed on it holds a reference to the socket, so a plain close
/// would leave the connection open (and its receive pending) until the
/// server closed it; the shutdown ends the receive with the end of stream.
pub(crate) struct RingSocket(pub OwnedFd);

impl RingSocket {
    pub(crate) fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl Drop for RingSocket {
    fn drop(&mut self) {
        // SAFETY: shutdown on a descriptor this value owns; errors (a socket
        // never connected) change nothing.
        unsafe { libc::shutdown(self.0.as_raw_fd(), libc::SHUT_RDWR) };
    }
}

pub(crate) struct TlsContext {
    pub config: Arc<rustls::ClientConfig>,
    pub name: ServerName<'static>,
}

impl Transport {
    pub(crate) fn new(sock: TcpStream, tls: Option<&TlsContext>) -> io::Result<Transport> {
        stamp::enable(sock.as_raw_fd());
        Ok(match tls {
            None => Transport::Plain(sock),
            Some(ctx) => {
                let conn = ClientConnection::new(ctx.config.clone(), ctx.name.clone())
                    .map_err(|e| io::Error::other(e.to_string()))?;
                Transport::Tls(Box::new((sock, conn, None)))
            }
        })
    }

    pub(crate) fn socket(&mut self) -> &mut TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(b) => &mut b.0,
            Transport::Ring(_) => unreachable!("an io_uring socket has no readiness to wait for"),
        }
    }

    /// True while the TLS handshake is unfinished: ab counts it as connect time.
    pub(crate) fn handshaking(&self) -> bool {
        match self {
            Transport::Plain(_) | Transport::Ring(_) => false,
            Transport::Tls(b) => b.1.is_handshaking(),
        }
    }

    /// Whether TLS agreed on HTTP/2 (ALPN "h2", RFC 9113 §3.2); plain TCP
    /// has no agreement to make.
    pub(crate) fn agreed_h2(&self) -> bool {
        match self {
            Transport::Tls(b) => b.1.alpn_protocol() == Some(b"h2"),
            Transport::Plain(_) | Transport::Ring(_) => true,
        }
    }

    /// Sends whatever TLS records are queued; Ok(true) when all went out.
    pub(crate) fn flush(&mut self) -> io::Result<bool> {
        if let Transport::Tls(b) = self {
            let (sock, conn, _) = &mut **b;
            while conn.wants_write() {
                match conn.write_tls(sock) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(true)
    }

    /// Writes plaintext; returns how much was accepted (TLS takes it all and
    /// queues records, flushed as the socket allows).
    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(data),
            Transport::Ring(_) => unreachable!("io_uring sends are submitted, not written"),
            Transport::Tls(b) => {
                let n = b.1.writer().write(data)?;
                self.flush()?;
                Ok(n)
            }
        }
    }

    /// Reads plaintext. Ok(0) is the end of the stream; WouldBlock means no
    /// plaintext now. `note` says whether the socket was read to empty, and
    /// when what was read arrived.
    pub(crate) fn read(&mut self, buf: &mut [u8], note: &mut ReadNote) -> io::Result<usize> {
        match self {
            Transport::Ring(_) => unreachable!("io_uring receives complete, they are not read"),
            Transport::Plain(s) => {
                let (n, stamp) = stamp::recv(s.as_raw_fd(), buf)?;
                // A short read empties the receive queue (nginx's ngx_unix_recv
                // clears rev->ready the same way), saving a read that would
                // only return EAGAIN.
                note.drained = n < buf.len();
                note.stamp = stamp;
                Ok(n)
            }
            Transport::Tls(b) => {
                let (sock, conn, last) = &mut **b;
                loop {
                    match conn.reader().read(buf) {
                        Ok(n) => {
                            note.stamp = *last;
                            return Ok(n);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                    match conn.read_tls(&mut Stamped { fd: sock.as_raw_fd(), stamp: last }) {
                        Ok(0) => {
                            note.drained = true;
                            return Ok(0);
                        }
                        Ok(_) => {
                            conn.process_new_packets().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                            if conn.wants_write() {
                                self.flush()?;
                                return self.read(buf, note);
                            }
                        }
                        Err(e) => {
                            if e.kind() == io::ErrorKind::WouldBlock {
                                note.drained = true;
                            }
                            return Err(e);
                        }
                    }
                }
            }
        }
    }

    /// Advances a TLS handshake as far as the socket allows.
    pub(crate) fn handshake(&mut self) -> io::Result<()> {
        self.flush()?;
        if let Transport::Tls(b) = self {
            let (sock, conn, _) = &mut **b;
            while conn.is_handshaking() {
                match conn.read_tls(sock) {
                    Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(_) => {
                        conn.process_new_packets().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        self.flush()?;
        Ok(())
    }
}

/// Certificates are not verified, as ab and wrk do not: load tests run
/// against local servers with self-signed certificates, and a verification
/// failure must not masquerade as a server fault.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        msg: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(msg, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        msg: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(msg, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The TLS settings for `host`; with `h2`, ALPN offers HTTP/2 alone.
pub(crate) fn tls_context(host: &str, h2: bool) -> Result<TlsContext, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
        .with_no_client_auth();
    let mut config = config;
    if h2 {
        config.alpn_protocols = vec![b"h2".to_vec()];
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let name = ServerName::try_from(bare).map_err(|e| e.to_string())?;
    Ok(TlsContext { config: Arc::new(config), name })
}
