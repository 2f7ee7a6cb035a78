//! The first bytes of a connection are an HTTP request: a WebSocket upgrade goes on to the
//! sync protocol; a plain `GET /healthz` or `GET /metrics` is answered here and closed.

use crate::metrics::Metrics;
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Longest request head read (bytes): room for a bearer token of `auth::MAX_TOKEN_BYTES` and
/// more, so that a token just past that bound is refused as such (a typed refusal), not as a
/// bad request.
const MAX_HEAD: usize = 16384;

pub enum Request {
    Upgrade,
    Get(String),
    Bad,
}

/// Read up to the end of the request head. Returns every byte read (the WebSocket layer reads
/// them again) and what the request asks for. Each read is searched from where the last one
/// ended (less the three bytes a split terminator may start with): a head sent one byte at a
/// time costs linear time, not quadratic.
pub async fn read_head<S: AsyncRead + Unpin>(io: &mut S) -> io::Result<(Vec<u8>, Request)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = io.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find_end(&buf, from) {
            let req = classify(&buf[..end]);
            return Ok((buf, req));
        }
        if buf.len() > MAX_HEAD {
            return Ok((buf, Request::Bad));
        }
    }
}

/// Where the head's terminating blank line starts, searching from `from`.
fn find_end(buf: &[u8], from: usize) -> Option<usize> {
    buf[from..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| from + p)
}

fn classify(head: &[u8]) -> Request {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let first: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
    let [method, path, _version] = first[..] else {
        return Request::Bad;
    };
    if method != "GET" {
        return Request::Bad;
    }
    let upgrade = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("upgrade:") && l.contains("websocket")
    });
    if upgrade {
        Request::Upgrade
    } else {
        Request::Get(path.to_string())
    }
}

/// What `GET /healthz` and `GET /metrics` report.
pub struct Health<'a> {
    pub shutting_down: bool,
    /// Whether the store can be reached (`Backend::reachable`).
    pub store_reachable: bool,
    pub metrics: &'a Metrics,
}

/// Answer a plain HTTP request and close.
pub async fn respond<S: AsyncWrite + Unpin>(io: &mut S, req: Request, health: &Health<'_>) {
    let (status, ctype, body) = match req {
        Request::Get(p) if p == "/healthz" && health.shutting_down => (
            "503 Service Unavailable",
            "text/plain",
            "shutting down\n".to_string(),
        ),
        Request::Get(p) if p == "/healthz" && !health.store_reachable => (
            "503 Service Unavailable",
            "text/plain",
            "the store (PostgreSQL) is unreachable\n".to_string(),
        ),
        Request::Get(p) if p == "/healthz" => ("200 OK", "text/plain", "ok\n".to_string()),
        Request::Get(p) if p == "/metrics" => (
            "200 OK",
            "text/plain; version=0.0.4",
            health.metrics.render(),
        ),
        Request::Get(_) => ("404 Not Found", "text/plain", "not found\n".to_string()),
        _ => ("400 Bad Request", "text/plain", "bad request\n".to_string()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = io.write_all(head.as_bytes()).await;
    let _ = io.write_all(body.as_bytes()).await;
    let _ = io.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that yields one byte per read.
    struct Trickle(Vec<u8>, usize);

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            if self.1 < self.0.len() {
                let b = self.0[self.1];
                buf.put_slice(&[b]);
                self.1 += 1;
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_head_sent_a_byte_at_a_time_is_found_once() {
        let mut head = b"GET /metrics HTTP/1.1\r\n".to_vec();
        head.extend(std::iter::repeat_n(b'a', 7000));
        head.extend_from_slice(b"\r\n\r\n");
        let t = std::time::Instant::now();
        let (buf, req) = read_head(&mut Trickle(head.clone(), 0)).await.unwrap();
        assert_eq!(buf, head);
        assert!(matches!(req, Request::Get(p) if p == "/metrics"));
        // Quadratic search took tens of ms for this in a debug build; linear takes well under.
        assert!(
            t.elapsed() < std::time::Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
    }
}
