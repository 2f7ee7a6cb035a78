//! The connection handshake: today the client's first message must be `Hello` (repository
//! name and cursor). This is the one place the authenticated exchange (server challenge,
//! client signature, `Hello` with key) replaces; it may fill in the session.

use crate::refusal::{Ended, Refusal};
use crate::session::Session;
use futures_util::{Stream, StreamExt};
use ibexdb::Message;
use tokio_tungstenite::tungstenite::{Error as WsError, Message as Ws};

/// What the handshake yields: the repository and the client's cursor.
pub struct Hello {
    pub repo: String,
    pub cursor: u64,
}

/// Read frames until the first protocol message, which must be a `Hello`.
pub async fn handshake<S>(
    source: &mut S,
    _session: &mut Session,
    max: usize,
) -> Result<Hello, Ended>
where
    S: Stream<Item = Result<Ws, WsError>> + Unpin,
{
    let bytes = loop {
        match source.next().await {
            Some(Ok(Ws::Binary(b))) => break b,
            Some(Ok(Ws::Text(_))) => {
                return Err(Ended::protocol("text frames are not part of the protocol"))
            }
            Some(Ok(Ws::Close(_))) | None => return Err(Ended::Closed("closed before Hello")),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(crate::connection::ws_error(e, max)),
        }
    };
    match Message::decode(&bytes) {
        Ok(Message::Hello { repo, cursor }) => Ok(Hello { repo, cursor }),
        Ok(Message::Push { .. }) => Err(Ended::protocol("Push before Hello")),
        Ok(_) => Err(Ended::protocol(
            "a server-to-client message sent to the server",
        )),
        Err(e) => Err(Ended::Refused(
            hello_name(&bytes)
                .and_then(|n| Refusal::invalid_repository(&n))
                .unwrap_or_else(|| Refusal::from(&e)),
        )),
    }
}

/// The repository name of a `Hello` that did not decode, if its header and name can be read
/// (so that a bad name gets `InvalidRepository` rather than a generic protocol error).
fn hello_name(b: &[u8]) -> Option<String> {
    if b.len() < 3 || b[0] != ibexdb::PROTOCOL_VERSION || b[1] != 1 {
        return None;
    }
    let (mut len, mut shift, mut i) = (0usize, 0, 2);
    loop {
        let byte = *b.get(i)?;
        len |= ((byte & 0x7f) as usize).checked_shl(shift)?;
        i += 1;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 28 {
            return None;
        }
    }
    let name = b.get(i..i.checked_add(len)?)?;
    Some(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hello_name_is_read_even_when_invalid() {
        let ok = ibexdb::Message::Hello {
            repo: "r".into(),
            cursor: 5,
        }
        .encode();
        assert_eq!(super::hello_name(&ok).as_deref(), Some("r"));
        assert_eq!(
            super::hello_name(&[1, 1, 3, b'.', b'/', b'x', 0]).as_deref(),
            Some("./x")
        );
        assert_eq!(super::hello_name(&[1, 1, 9, b'a']), None);
        assert_eq!(super::hello_name(&[1, 3, 1, b'a']), None);
    }
}
