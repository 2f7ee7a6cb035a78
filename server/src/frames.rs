//! A WebSocket frame as the sync protocol sees it: a binary frame carries one message; a text
//! frame is a protocol error; control frames (ping, pong) are skipped; a close or the end of
//! the stream ends the session; a read error is a close, a `Limit` refusal when the peer
//! sent a message over `--max-message-bytes`, or a `ProtocolError` for a frame that breaks
//! RFC 6455. The handshake and the session loop read alike.

use crate::refusal::{Ended, Refusal};
use bytes::Bytes;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::{Error as WsError, Message as Ws};

/// What a frame read from the socket means: `Ok(Some(bytes))` a message, `Ok(None)` a frame to
/// skip, `Err` the end of the session (`closed` says why when the peer closed).
pub fn message(
    frame: Option<Result<Ws, WsError>>,
    max: usize,
    closed: &'static str,
) -> Result<Option<Bytes>, Ended> {
    match frame {
        Some(Ok(Ws::Binary(b))) => Ok(Some(b)),
        Some(Ok(Ws::Text(_))) => Err(Ended::protocol("text frames are not part of the protocol")),
        Some(Ok(Ws::Close(_))) | None => Err(Ended::Closed(closed)),
        Some(Ok(_)) => Ok(None),
        Some(Err(e)) => Err(read_error(e, max)),
    }
}

/// A WebSocket read error: an oversized message is a `Limit` refusal, anything else a close.
fn read_error(e: WsError, max: usize) -> Ended {
    match e {
        WsError::Capacity(CapacityError::MessageTooLong { size, .. }) => Ended::Refused(Refusal::limit(
            "message size",
            format!("a message of {size} bytes exceeds the limit of {max} bytes (--max-message-bytes)"),
        )),
        WsError::Capacity(_) => Ended::Refused(Refusal::limit(
            "message size",
            format!("a frame exceeds the limit of {max} bytes (--max-message-bytes)"),
        )),
        // A frame that breaks RFC 6455 (reserved bits, an unknown opcode, a lone continuation,
        // a fragmented or oversized control frame, an unmasked client frame) is refused as a
        // malformed message is: typed, before the close (the socket still writes). A peer that
        // just went away (no closing handshake) is a close.
        WsError::Protocol(p) if !matches!(p, ProtocolError::ResetWithoutClosingHandshake) => {
            Ended::Refused(Refusal::from(&ibexdb::Error::Protocol {
                kind: ibexdb::ProtocolErrorKind::Malformed,
                detail: format!("WebSocket framing: {p}"),
            }))
        }
        _ => Ended::Closed("socket error"),
    }
}
