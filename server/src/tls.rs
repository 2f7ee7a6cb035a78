//! `wss://` served directly: a rustls acceptor (ring provider) from a PEM certificate chain and
//! private key (`--tls-cert`, `--tls-key`), and the accept of a connection, which reads at most
//! [`MAX_HANDSHAKE_BYTES`] before its handshake completes.

use crate::stream::BoxIo;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{crypto::ring, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// The acceptor for `cert` (PEM chain, leaf first) and `key` (PEM PKCS#8, PKCS#1 or SEC1).
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect())
        .map_err(|e| format!("cannot read certificates from {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("cannot read a private key from {}: {e}", key.display()))?;
    let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate and key: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Most bytes read from a client before its TLS handshake completes (its ClientHello and its
/// last flight): browsers send about 2 KiB, post-quantum key shares included. The TLS layer
/// would otherwise hold a handshake message of up to 64 KiB for a client that never finishes
/// it, until `--handshake-timeout-ms` (issue 23: ~70 KiB of RSS per half-open handshake,
/// ~20 KiB with this bound; `server/tests/hostile_tls.rs`).
pub const MAX_HANDSHAKE_BYTES: usize = 16 << 10;

/// The TLS session of an accepted connection (`None` when the handshake fails or reads more
/// than [`MAX_HANDSHAKE_BYTES`]).
pub async fn accept(acceptor: &TlsAcceptor, tcp: TcpStream) -> Option<BoxIo> {
    let mut tls = acceptor.accept(Capped::new(tcp)).await.ok()?;
    tls.get_mut().0.left = None;
    Some(Box::new(tls))
}

/// A stream that reads at most `left` bytes (while `Some`), then fails.
struct Capped<S> {
    inner: S,
    left: Option<usize>,
}

impl<S> Capped<S> {
    fn new(inner: S) -> Capped<S> {
        Capped {
            inner,
            left: Some(MAX_HANDSHAKE_BYTES),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Capped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let Some(left) = self.left else {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        };
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        // Read through a small buffer while the cap holds (the handshake only); at the cap,
        // one byte more is an error (a client that only waits waits for its timeout).
        let mut tmp = [0u8; 4096];
        let n = left.min(buf.remaining()).min(tmp.len()).max(1);
        let mut part = ReadBuf::new(&mut tmp[..n]);
        let r = Pin::new(&mut self.inner).poll_read(cx, &mut part);
        let got = part.filled().len();
        if got > left {
            let e = format!("a TLS handshake past {MAX_HANDSHAKE_BYTES} bytes");
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e)));
        }
        buf.put_slice(part.filled());
        self.left = Some(left - got);
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Capped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, b)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
