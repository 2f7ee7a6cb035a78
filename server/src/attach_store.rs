//! Attachment bytes over a session (docs/design.md §12.2, *Attachment bytes*): an upload is
//! authorized before a byte is stored — the session may write the repository, a stored commit
//! records the offered hash with that size, the size is within `--max-attachment-bytes` and the
//! repository's total within `--max-repo-attachment-bytes` — then its chunks go to a temporary
//! file under the data directory, hashed as they arrive, fsynced and renamed to the hash only
//! when the SHA-256 matches. An unfinished upload's file is removed when the connection ends
//! or the session offers another (no resume: nothing a client sends outlives its connection).
//! A download is authorized as a read of a repository whose commits record the hash, and is
//! streamed in chunks while the connection's queue is under half full.
//!
//! Files: `DIR/NAME.attachments/<sha256 hex>`, uploads under way `tmp-<conn>`. The PostgreSQL
//! store keeps no attachment bytes: it refuses both with `LimitError` `attachments`.

use crate::config::Store;
use crate::log;
use crate::outbox::Outbox;
use crate::refusal::Ended;
use crate::registry::RepoHandle;
use crate::repo_thread::Cmd;
use crate::server::Server;
use crate::session::Session;
use bytes::Bytes;
use ibexdb::{Error, Message, PermissionErrorKind, Sha256Stream, SignatureErrorKind};
use ibexdb::{ATTACH_CHUNK_BYTES, MAX_ATTACHMENT_SIZE};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// One upload under way on a connection. Dropped unfinished, its file is removed and its
/// reservation given back.
pub struct Upload {
    server: Arc<Server>,
    repo: String,
    hash: [u8; 32],
    size: u64,
    offset: u64,
    file: Option<File>,
    hasher: Sha256Stream,
    tmp: PathBuf,
    done: bool,
}

impl Drop for Upload {
    fn drop(&mut self) {
        if !self.done {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
            self.server.attach_usage.release(&self.repo, self.size);
        }
    }
}

fn hex(h: &[u8; 32]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// The repository's attachment directory (the file store only).
fn dir_of(server: &Server, repo: &str) -> Option<PathBuf> {
    match &server.cfg.store {
        Store::Files(dir) => Some(dir.join(format!("{repo}.attachments"))),
        _ => None,
    }
}

/// Bytes of the complete files in `dir` (0 when there is none).
fn bytes_on_disk(dir: &PathBuf) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with("tmp-"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn refuse(out: &Outbox, session: &Session, hash: [u8; 32], e: &Error) {
    log::event_about(
        session.peer.ip(),
        "attach_refused",
        &[
            ("conn", &session.conn),
            ("hash", &hex(&hash)),
            ("error", &e.name()),
            ("kind", &e.kind().unwrap_or("-")),
        ],
    );
    out.force(Bytes::from(Message::attach_error(hash, e).encode()));
}

fn limit(what: &str, detail: String) -> Error {
    Error::Limit {
        what: what.into(),
        detail,
    }
}

fn permission(kind: PermissionErrorKind, detail: &str) -> Error {
    Error::Permission {
        kind,
        detail: detail.into(),
    }
}

fn io(e: std::io::Error) -> Error {
    Error::Unavailable {
        detail: format!("the server could not store or read attachment bytes: {e}"),
    }
}

/// Ask the repository thread for the session's rights and whether a stored commit records
/// `(hash, size)`.
async fn check(
    repo: &RepoHandle,
    session: &Session,
    hash: [u8; 32],
    size: u64,
) -> Result<Result<(ibexdb::Rights, bool), Error>, Ended> {
    let (done, answer) = oneshot::channel();
    let cmd = Cmd::AttachCheck {
        session: session.clone(),
        hash,
        size,
        done,
    };
    if !repo.send(cmd) {
        return Err(Ended::Closed("the repository closed"));
    }
    answer
        .await
        .map_err(|_| Ended::Closed("the repository closed"))
}

/// What the store's checks say of an offer or a request, before anything is stored or read.
async fn authorize(
    server: &Server,
    repo: &RepoHandle,
    session: &Session,
    (hash, size): ([u8; 32], u64),
    write: bool,
) -> Result<Result<PathBuf, Error>, Ended> {
    let Some(dir) = dir_of(server, repo.name()) else {
        return Ok(Err(limit(
            "attachments",
            "this server (PostgreSQL store) keeps no attachment bytes".into(),
        )));
    };
    if write && size > server.cfg.max_attachment_bytes.min(MAX_ATTACHMENT_SIZE) {
        let max = server.cfg.max_attachment_bytes;
        let detail = format!("an attachment of {size} bytes is over {max} (--max-attachment-bytes); nothing was stored");
        return Ok(Err(limit("attachment size", detail)));
    }
    let (rights, known) = match check(repo, session, hash, size).await? {
        Ok(a) => a,
        Err(e) => return Ok(Err(e)),
    };
    if write && !rights.write {
        let d = "this session may not write the repository; nothing was stored";
        return Ok(Err(permission(PermissionErrorKind::CannotWrite, d)));
    }
    if !write && !rights.read {
        let d = "this session may not read the repository";
        return Ok(Err(permission(PermissionErrorKind::CannotRead, d)));
    }
    if !known {
        let d = "no stored commit of this repository records an attachment of this hash and size";
        return Ok(Err(permission(PermissionErrorKind::NotFound, d)));
    }
    Ok(Ok(dir))
}

/// `AttachOffer`: authorize, then answer `AttachWant` (0: send everything; the size: the
/// server holds the bytes already) or `AttachError`.
pub async fn offer(
    server: &Arc<Server>,
    (out, repo, session): (&Outbox, &RepoHandle, &Session),
    upload: &mut Option<Upload>,
    hash: [u8; 32],
    size: u64,
) -> Result<(), Ended> {
    *upload = None; // an unfinished upload is abandoned (its file removed)
    let dir = match authorize(server, repo, session, (hash, size), true).await? {
        Ok(dir) => dir,
        Err(e) => {
            refuse(out, session, hash, &e);
            return Ok(());
        }
    };
    let path = dir.join(hex(&hash));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == size) {
        out.force(want(hash, size));
        return Ok(());
    }
    let max = server.cfg.max_repo_attachment_bytes;
    if !server
        .attach_usage
        .reserve(repo.name(), size, max, || bytes_on_disk(&dir))
    {
        let detail = format!("repository {} would keep over {max} attachment bytes (--max-repo-attachment-bytes); nothing was stored", repo.name());
        refuse(out, session, hash, &limit("attachment bytes", detail));
        return Ok(());
    }
    let tmp = dir.join(format!("tmp-{}", session.conn));
    let mut up = Upload {
        server: server.clone(),
        repo: repo.name().to_string(),
        hash,
        size,
        offset: 0,
        file: None,
        hasher: Sha256Stream::new(),
        tmp: tmp.clone(),
        done: false,
    };
    let created = std::fs::create_dir_all(&dir)
        .and_then(|()| File::create(&tmp))
        .map_err(io);
    match created {
        Ok(f) => up.file = Some(f),
        Err(e) => {
            refuse(out, session, hash, &e);
            return Ok(());
        }
    }
    if size == 0 {
        return finish(out, session, up, &path);
    }
    *upload = Some(up);
    out.force(want(hash, 0));
    Ok(())
}

fn want(hash: [u8; 32], offset: u64) -> Bytes {
    Bytes::from(Message::AttachWant { hash, offset }.encode())
}

/// `AttachChunk` of an upload: the next bytes of the offered attachment, else the connection
/// is closed with `ProtocolError` (its file removed).
pub fn chunk(
    (out, session): (&Outbox, &Session),
    upload: &mut Option<Upload>,
    hash: [u8; 32],
    offset: u64,
    bytes: &[u8],
) -> Result<(), Ended> {
    let Some(up) = upload.as_mut() else {
        return Err(Ended::protocol(
            "an attachment chunk without an accepted offer",
        ));
    };
    if up.hash != hash || up.offset != offset || offset + bytes.len() as u64 > up.size {
        return Err(Ended::protocol(
            "an attachment chunk that does not continue the offered upload",
        ));
    }
    let file = up.file.as_mut().expect("an upload under way has its file");
    if let Err(e) = file.write_all(bytes) {
        refuse(out, session, hash, &io(e));
        *upload = None;
        return Ok(());
    }
    up.hasher.update(bytes);
    up.offset += bytes.len() as u64;
    if up.offset < up.size {
        return Ok(());
    }
    let up = upload.take().expect("checked above");
    let Some(dir) = up.tmp.parent().map(PathBuf::from) else {
        return Ok(());
    };
    finish(out, session, up, &dir.join(hex(&hash)))
}

/// The last byte arrived: check the SHA-256, fsync, name the file by its hash, fsync the
/// directory, and say so (`AttachWant` with offset = size). A mismatch stores nothing.
fn finish(out: &Outbox, session: &Session, mut up: Upload, path: &PathBuf) -> Result<(), Ended> {
    let hasher = std::mem::take(&mut up.hasher);
    if hasher.finish() != up.hash {
        let e = Error::Signature {
            kind: SignatureErrorKind::Tampered,
            detail: "the uploaded bytes' SHA-256 is not the offered hash; nothing was stored"
                .into(),
        };
        refuse(out, session, up.hash, &e);
        return Ok(()); // dropping `up` removes the file
    }
    let file = up.file.take().expect("an upload under way has its file");
    let stored = file
        .sync_all()
        .and_then(|()| {
            if std::fs::metadata(path).is_ok_and(|m| m.len() == up.size) {
                // Stored meanwhile by another connection: keep that one.
                return Err(std::io::Error::other("exists"));
            }
            std::fs::rename(&up.tmp, path)
        })
        .and_then(|()| crate::files::sync_dir(path.parent().unwrap_or(path)));
    match stored {
        Ok(()) => up.done = true,
        Err(e) if e.to_string() == "exists" => {}
        Err(e) => {
            refuse(out, session, up.hash, &io(e));
            return Ok(());
        }
    }
    log::event_about(
        session.peer.ip(),
        "attach_stored",
        &[
            ("conn", &session.conn),
            ("hash", &hex(&up.hash)),
            ("bytes", &up.size),
        ],
    );
    out.force(want(up.hash, up.size));
    Ok(())
}

/// `AttachGet`: authorize, then stream the file from `offset` in chunks, each queued once the
/// connection's queue is under half full (the socket is not read meanwhile).
pub async fn get(
    server: &Arc<Server>,
    (out, repo, session): (&Outbox, &RepoHandle, &Session),
    hash: [u8; 32],
    size: u64,
    offset: u64,
) -> Result<(), Ended> {
    let dir = match authorize(server, repo, session, (hash, size), false).await? {
        Ok(dir) => dir,
        Err(e) => {
            refuse(out, session, hash, &e);
            return Ok(());
        }
    };
    let opened = File::open(dir.join(hex(&hash))).and_then(|f| Ok((f.metadata()?.len(), f)));
    let mut file = match opened {
        Ok((len, f)) if len == size => f,
        _ => {
            let e = Error::Unavailable {
                detail: "the server does not hold these attachment bytes (not uploaded yet)".into(),
            };
            refuse(out, session, hash, &e);
            return Ok(());
        }
    };
    if let Err(e) = file.seek(SeekFrom::Start(offset)) {
        refuse(out, session, hash, &io(e));
        return Ok(());
    }
    let mut at = offset;
    let mut buf = vec![0u8; ATTACH_CHUNK_BYTES];
    loop {
        while !out.has_room() {
            if out.is_closed() {
                return Err(Ended::Closed("closed during a download"));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let n = (size - at).min(ATTACH_CHUNK_BYTES as u64) as usize;
        if let Err(e) = file.read_exact(&mut buf[..n]) {
            refuse(out, session, hash, &io(e));
            return Ok(());
        }
        let m = Message::AttachChunk {
            hash,
            offset: at,
            bytes: buf[..n].to_vec(),
        };
        if !out.push(Bytes::from(m.encode())) {
            return Err(Ended::Closed("queue full during a download"));
        }
        at += n as u64;
        if at == size {
            return Ok(());
        }
    }
}
