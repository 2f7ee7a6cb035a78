//! What the server knows about one connection, sent to the repository thread with each
//! command: its number and peer address (and, with the authenticated handshake, its key).

use std::fmt;
use std::net::SocketAddr;

/// One connection's identity as the repository thread sees it.
#[derive(Debug, Clone)]
pub struct Session {
    /// Unique per server process.
    pub conn: u64,
    pub peer: SocketAddr,
}

impl fmt::Display for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn={} peer={}", self.conn, self.peer)
    }
}
