//! Creating a repository (docs/design.md §12.2, §12.6): a name the store does not hold gets
//! nothing (no files, no thread, no subscription) until a session that said it creates (the
//! `Hello`'s create flag) pushes a root that verifies. The founding session is welcomed with
//! head 0; its first message must be that `Push`, within the handshake timeout. The push is
//! verified first on a scratch in-memory copy, with the server's admission rules for this
//! session (signatures, ids, the permission rule, an owned root unless `--accept-trusted`,
//! the session's own right to write), so a refused founding costs the server no file and no
//! open repository; only a verified root opens (and creates) the repository, where the push
//! is verified again and stored.

use crate::config::Config;
use crate::frames;
use crate::limits::PushBudgets;
use crate::outbox::Outbox;
use crate::refusal::{Ended, Refusal};
use crate::session::Session;
use crate::store::server_options;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use ibexdb::{
    system_clock, Admission, CommitId, Error, MemStorage, Message, PermissionErrorKind, Repo,
    Rights,
};
use std::sync::Arc;
use tokio::time::{timeout_at, Instant};
use tokio_tungstenite::tungstenite::{Error as WsError, Message as Ws};

/// A verified founding push: the commits and seals to store.
pub struct Founding {
    pub commits: Vec<(CommitId, Vec<u8>)>,
    pub seals: Vec<Vec<u8>>,
}

/// The refusal for a `Hello` on a name that does not exist, without the create flag.
pub fn not_found(name: &str) -> Refusal {
    Refusal::from(&Error::Permission {
        kind: PermissionErrorKind::NotFound,
        detail: format!(
            "there is no repository {name:?} on this server (it is created by its founder's first push)"
        ),
    })
}

/// Welcome the founding session (head 0; the rights its root will give it), then read its
/// first message, which must be a `Push` whose commits found the repository.
pub async fn read_founding<S>(
    cfg: &Arc<Config>,
    budgets: &PushBudgets,
    source: &mut S,
    out: &Outbox,
    session: &Session,
    name: &str,
) -> Result<Founding, Ended>
where
    S: Stream<Item = Result<Ws, WsError>> + Unpin,
{
    let welcome = Message::Welcome {
        repo: name.to_string(),
        head: 0,
        rights: Rights {
            read: true,
            write: true,
            administer: session.key.is_some(),
        },
    };
    out.force(Bytes::from(welcome.encode()));
    let deadline = Instant::now() + cfg.handshake_timeout;
    let max = cfg.max_message_bytes;
    let bytes = loop {
        let frame = match timeout_at(deadline, source.next()).await {
            Ok(f) => f,
            Err(_) => {
                let ms = cfg.handshake_timeout.as_millis();
                let detail = format!(
                    "no founding push within {ms} ms of the Welcome (--handshake-timeout-ms)"
                );
                return Err(Ended::Refused(Refusal::limit("handshake timeout", detail)));
            }
        };
        if let Some(b) = frames::message(frame, max, "closed before founding")? {
            break b;
        }
    };
    // A founding push is a push: it takes from its address's budget before it costs a check.
    if let Err(wait) = budgets.take(session.peer.ip(), bytes.len()) {
        let detail = format!(
            "over {} pushes or {} bytes per second from this address (--push-rate, --push-bytes-rate); nothing was created; retry in {} ms",
            cfg.push_rate,
            cfg.push_bytes_rate,
            wait.as_millis()
        );
        return Err(Ended::Refused(Refusal::limit("push rate", detail)));
    }
    let (commits, seals) = match Message::decode(&bytes) {
        Ok(Message::Push { commits, seals }) => (commits, seals),
        Ok(_) => {
            return Err(Ended::protocol(
                "a session that creates a repository must first push its root",
            ))
        }
        Err(e) => return Err(Ended::Refused(Refusal::from(&e))),
    };
    let (cfg, key, name) = (cfg.clone(), session.key, name.to_string());
    let checked = tokio::task::spawn_blocking(move || {
        verify(&cfg, &name, key, &commits, &seals).map(|_| Founding { commits, seals })
    })
    .await
    .map_err(|_| Ended::Closed("founding check failed"))?;
    checked.map_err(|e| Ended::Refused(Refusal::from(&e)))
}

/// Verify a founding push on a scratch copy with the server's admission rules: it must found
/// the repository (a root that verifies and that the session may write under).
fn verify(
    cfg: &Config,
    name: &str,
    session: Option<ibexdb::PublicKey>,
    commits: &[(CommitId, Vec<u8>)],
    seals: &[Vec<u8>],
) -> Result<(), Error> {
    let mut opts = server_options(cfg, name, system_clock());
    opts.max_pending = 0;
    let mut scratch = Repo::open(MemStorage::new(), None, opts)?;
    let admission = Admission::Server {
        session,
        allow_unowned: cfg.accept_trusted,
    };
    scratch.receive_as(&admission, commits, seals)?;
    if scratch.commit_count() == 0 {
        return Err(Error::Permission {
            kind: PermissionErrorKind::CannotCreate,
            detail: format!(
                "the first push to the new repository {name:?} must carry its root commit"
            ),
        });
    }
    Ok(())
}
