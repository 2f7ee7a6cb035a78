//! What the server refuses, as the `Error` message the client gets: the code, the error's name
//! and kind, and its text (docs/design.md §12.2). Limits name the limit and its flag.

use crate::log;
use crate::session::Session;
use ibexdb::{Error, ErrorCode, Message};

/// A refusal: the error the client is told (as `Message::error`), its code, and a short name
/// for logs and metrics.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub code: ErrorCode,
    error: Error,
    /// `limit` refusals name the limit (`connections`, `push rate`, …); others the error.
    pub what: String,
}

impl Refusal {
    pub fn limit(what: &str, detail: String) -> Refusal {
        Refusal::from(&Error::Limit {
            what: what.to_string(),
            detail,
        })
    }

    pub fn unavailable(detail: String) -> Refusal {
        Refusal::from(&Error::Unavailable { detail })
    }

    /// The error's kind (`Error::kind`), e.g. `cannot-read`.
    pub fn kind(&self) -> Option<&str> {
        self.error.kind()
    }

    pub fn encode(&self) -> Vec<u8> {
        Message::error(&self.error).encode()
    }

    /// "ErrorName: message", for the log.
    pub fn text(&self) -> String {
        format!("{}: {}", self.error.name(), self.error)
    }

    /// One log line per refusal told to a session (of repository `repo`, once known).
    pub fn log(&self, session: &Session, repo: Option<&str>) {
        log::event_about(
            session.peer.ip(),
            "refusal",
            &[
                ("conn", &session.conn),
                ("peer", &session.peer),
                ("repo", &repo.unwrap_or("-")),
                ("code", &(self.code as u8)),
                ("what", &self.what),
                ("text", &self.text()),
            ],
        );
    }
}

impl From<&Error> for Refusal {
    fn from(e: &Error) -> Refusal {
        let what = match e {
            Error::Limit { what, .. } => what.clone(),
            e => e.name().to_string(),
        };
        Refusal {
            code: ErrorCode::of(e),
            error: e.clone(),
            what,
        }
    }
}

/// Why a connection's session ended.
pub enum Ended {
    /// The server refuses something: the client is told, then the connection is closed.
    Refused(Refusal),
    /// The peer closed, the server closed the queue, or the socket failed.
    Closed(&'static str),
}

impl Ended {
    pub fn protocol(detail: &str) -> Ended {
        Ended::Refused(Refusal::from(&Error::Protocol {
            kind: ibexdb::ProtocolErrorKind::Unexpected,
            detail: detail.to_string(),
        }))
    }
}
