//! A WebSocket client written by hand, for what a well-behaved library will not do: begin a
//! frame and never finish it, answer pings while doing so, stop reading.

use ibexdb::Message;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A client frame (masked with a zero key, so the payload is sent as is): the header for a
/// payload of `len` bytes, opcode `op`, final fragment.
pub fn header(op: u8, len: usize) -> Vec<u8> {
    let mut h = vec![0x80 | op];
    if len < 126 {
        h.push(0x80 | len as u8);
    } else if len < 65536 {
        h.push(0x80 | 126);
        h.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        h.push(0x80 | 127);
        h.extend_from_slice(&(len as u64).to_be_bytes());
    }
    h.extend_from_slice(&[0, 0, 0, 0]);
    h
}

/// The first fragment of a message (opcode `op`, not final): more must follow.
pub fn first_fragment(op: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = header(op, payload.len());
    f[0] &= 0x7f;
    f.extend_from_slice(payload);
    f
}

/// A whole client frame.
pub fn frame(op: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = header(op, payload.len());
    f.extend_from_slice(payload);
    f
}

/// A raw connection after the HTTP upgrade.
pub struct Raw {
    pub tcp: TcpStream,
    buf: Vec<u8>,
}

/// What the server sent: a frame's opcode and payload, or the end.
pub enum Got {
    Frame(u8, Vec<u8>),
    Closed,
    Nothing,
}

impl Raw {
    pub async fn connect(addr: &str) -> Raw {
        Raw::upgrade(TcpStream::connect(addr).await.unwrap(), addr).await
    }

    /// [`Raw::connect`] with a receive buffer of `bytes` (the kernel's floor applies): a
    /// client that does not read then fills the path to it after kilobytes, not megabytes.
    pub async fn connect_small(addr: &str, bytes: u32) -> Raw {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(bytes).unwrap();
        let tcp = sock.connect(addr.parse().unwrap()).await.unwrap();
        Raw::upgrade(tcp, addr).await
    }

    async fn upgrade(mut tcp: TcpStream, addr: &str) -> Raw {
        let req = format!(
            "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        tcp.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Raw {
            tcp,
            buf: Vec::new(),
        };
        loop {
            if let Some(p) = raw.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                raw.buf.drain(..p + 4);
                return raw;
            }
            assert!(raw.fill(Duration::from_secs(10)).await, "no upgrade answer");
        }
    }

    async fn fill(&mut self, wait: Duration) -> bool {
        let mut chunk = [0u8; 65536];
        match tokio::time::timeout(wait, self.tcp.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            _ => false,
        }
    }

    /// The next server frame within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Got {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if self.buf.len() >= 2 {
                let (op, len7) = (self.buf[0] & 0x0f, (self.buf[1] & 0x7f) as usize);
                let (at, len) = match len7 {
                    126 if self.buf.len() >= 4 => {
                        (4, u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize)
                    }
                    127 if self.buf.len() >= 10 => (
                        10,
                        u64::from_be_bytes(self.buf[2..10].try_into().unwrap()) as usize,
                    ),
                    126 | 127 => (usize::MAX, 0),
                    n => (2, n),
                };
                if at != usize::MAX && self.buf.len() >= at + len {
                    let payload = self.buf[at..at + len].to_vec();
                    self.buf.drain(..at + len);
                    return Got::Frame(op, payload);
                }
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Got::Nothing;
            }
            let mut chunk = [0u8; 65536];
            match tokio::time::timeout(left, self.tcp.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return Got::Closed,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
                Err(_) => return Got::Nothing,
            }
        }
    }

    /// The next protocol message, answering pings; `None` on close or after `wait`.
    pub async fn message(&mut self, wait: Duration) -> Option<Message> {
        loop {
            match self.next(wait).await {
                Got::Frame(2, p) => return Some(Message::decode(&p).unwrap()),
                Got::Frame(9, p) => self.send(&frame(10, &p)).await,
                Got::Frame(_, _) => continue,
                Got::Closed | Got::Nothing => return None,
            }
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        let _ = self.tcp.write_all(bytes).await;
    }

    /// Read the `Challenge`, send an anonymous `Hello` for `repo`, wait for the `Welcome`.
    pub async fn hello(&mut self, repo: &str) {
        match self.message(Duration::from_secs(10)).await {
            Some(Message::Challenge { .. }) => {}
            m => panic!("expected Challenge, got {m:?}"),
        }
        let hello = Message::Hello {
            repo: repo.into(),
            cursor: 0,
            auth: None,
            create: false,
        };
        self.send(&frame(2, &hello.encode())).await;
        match self.message(Duration::from_secs(10)).await {
            Some(Message::Welcome { .. }) => {}
            m => panic!("expected Welcome, got {m:?}"),
        }
    }
}
