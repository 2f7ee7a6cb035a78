//! What the server knows about one connection, sent to the repository thread with each
//! command: its number, peer address, and the key its handshake proved.

use ibexdb::PublicKey;
use std::fmt;
use std::net::SocketAddr;

/// One connection's identity as the repository thread sees it.
#[derive(Debug, Clone)]
pub struct Session {
    /// Unique per server process.
    pub conn: u64,
    pub peer: SocketAddr,
    /// The key the session proved (`None`: anonymous).
    pub key: Option<PublicKey>,
}

impl fmt::Display for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn={} peer={}", self.conn, self.peer)?;
        match &self.key {
            Some(k) => write!(f, " key={}", &k.to_hex()[..16]),
            None => write!(f, " key=anonymous"),
        }
    }
}
