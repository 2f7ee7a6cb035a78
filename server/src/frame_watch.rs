//! How long a client takes to send one message. The WebSocket layer yields a message only once
//! it is complete, and control frames (pongs) in between: a client that begins a large message
//! and never finishes it, answering every ping, would hold its read buffer and the message so
//! far (up to `--max-message-bytes`) for ever. `Watched` counts the bytes read from the socket;
//! `Watch` compares them with what the session has seen as whole messages and control frames,
//! and says since when a message has been incomplete (`--message-timeout-ms`).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// A client frame's header for a payload of at most 125 bytes (every control frame): two
/// bytes and the four-byte mask.
const CONTROL_HEADER: u64 = 6;

/// A byte stream that counts the bytes read from it.
pub struct Watched<S> {
    inner: S,
    read: Arc<AtomicU64>,
}

impl<S> Watched<S> {
    pub fn new(inner: S) -> (Watched<S>, Watch) {
        let read = Arc::new(AtomicU64::new(0));
        let watch = Watch {
            read: read.clone(),
            seen: 0,
            since: None,
        };
        (Watched { inner, read }, watch)
    }
}

/// The session's side: what it has seen of the bytes read.
pub struct Watch {
    read: Arc<AtomicU64>,
    /// Bytes accounted for by whole messages and control frames.
    seen: u64,
    /// When bytes past `seen` were first noticed (a message in progress).
    since: Option<Instant>,
}

impl Watch {
    /// A whole message arrived: every byte read so far is accounted for (bytes of the next
    /// message already buffered are counted from the next check on).
    pub fn message(&mut self) {
        self.seen = self.read.load(Relaxed);
        self.since = None;
    }

    /// A control frame with `payload` bytes arrived: it does not end a message in progress.
    pub fn control(&mut self, payload: usize) {
        self.seen += CONTROL_HEADER + payload as u64;
    }

    /// How long a message has been in progress at `now` (`None`: none is).
    pub fn pending_for(&mut self, now: Instant) -> Option<std::time::Duration> {
        if self.read.load(Relaxed) <= self.seen {
            self.since = None;
            return None;
        }
        let since = *self.since.get_or_insert(now);
        Some(now.duration_since(since))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.read.fetch_add(n as u64, Relaxed);
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn pongs_do_not_hide_a_message_in_progress() {
        let data = [7u8; 100];
        let (mut io, mut watch) = Watched::new(&data[..]);
        let t0 = Instant::now();
        assert_eq!(watch.pending_for(t0), None);
        let mut buf = [0u8; 50];
        io.read_exact(&mut buf).await.unwrap();
        watch.control(4); // a pong of 4 bytes: 10 of the 50 bytes
        let t1 = t0 + std::time::Duration::from_secs(1);
        assert_eq!(watch.pending_for(t0), Some(std::time::Duration::ZERO));
        assert_eq!(
            watch.pending_for(t1),
            Some(std::time::Duration::from_secs(1))
        );
        watch.message();
        assert_eq!(watch.pending_for(t1), None);
    }
}
