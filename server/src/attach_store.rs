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
//! Files: `DIR/NAME.attachments/<sha256 hex>`, uploads under way `tmp-<conn>`. With PostgreSQL
//! an upload is staged in `$TMPDIR/ibexdb-server-uploads/tmp-<pid>-<conn>` on the node, and
//! once verified written to the database in one transaction (`pg/attachments.rs`).

use crate::backend::Backend;
use crate::config::Store;
use crate::log;
use crate::outbox::Outbox;
use crate::pg::{Pg, Put};
use crate::refusal::{Ended, Refusal};
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
use std::time::{Duration, Instant};
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
    place: Place,
    done: bool,
    /// When the offer was accepted or the last chunk arrived.
    at: Instant,
}

impl Upload {
    /// The refusal for an upload whose next chunk is later than `limit`, if it is.
    pub fn late(&self, limit: Duration) -> Option<Ended> {
        (self.at.elapsed() >= limit).then(|| {
            let ms = limit.as_millis();
            let detail = format!("no chunk of the attachment upload for {ms} ms (--message-timeout-ms); nothing was stored");
            Ended::Refused(Refusal::limit("attachment upload timeout", detail))
        })
    }
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

/// Where a repository's attachment bytes are kept, and where an upload is staged.
#[derive(Clone)]
enum Place {
    /// The file store: the repository's attachment directory.
    Files(PathBuf),
    /// PostgreSQL, uploads staged in a directory of the node's.
    Pg(Arc<Pg>, PathBuf),
}

impl Place {
    fn of(server: &Server, repo: &str) -> Place {
        match (&server.backend, &server.cfg.store) {
            (Backend::Postgres(pg), _) => Place::Pg(
                pg.clone(),
                std::env::temp_dir().join("ibexdb-server-uploads"),
            ),
            (_, Store::Files(dir)) => Place::Files(dir.join(format!("{repo}.attachments"))),
            (_, Store::Postgres(_)) => unreachable!("a PostgreSQL store has a Postgres backend"),
        }
    }

    /// Where uploads are staged.
    fn staging(&self) -> &PathBuf {
        match self {
            Place::Files(dir) | Place::Pg(_, dir) => dir,
        }
    }

    /// Whether the bytes of `hash` (`size` of them) are stored.
    async fn holds(&self, repo: &str, hash: &[u8; 32], size: u64) -> Result<bool, Error> {
        match self {
            Place::Files(dir) => {
                Ok(std::fs::metadata(dir.join(hex(hash))).is_ok_and(|m| m.len() == size))
            }
            Place::Pg(pg, _) => Ok(pg.attachment_size(repo, hash).await? == Some(size)),
        }
    }

    /// The attachment bytes the repository keeps.
    async fn total(&self, repo: &str) -> Result<u64, Error> {
        match self {
            Place::Files(dir) => Ok(bytes_on_disk(dir)),
            Place::Pg(pg, _) => pg.attachment_total(repo).await,
        }
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
) -> Result<Result<Place, Error>, Ended> {
    let place = Place::of(server, repo.name());
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
    Ok(Ok(place))
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
    let place = match authorize(server, repo, session, (hash, size), true).await? {
        Ok(place) => place,
        Err(e) => {
            refuse(out, session, hash, &e);
            return Ok(());
        }
    };
    let name = repo.name();
    let counted = match place.holds(name, &hash, size).await {
        Ok(true) => {
            out.force(want(hash, size));
            return Ok(());
        }
        Ok(false) if server.attach_usage.knows(name) => 0,
        Ok(false) => place.total(name).await.unwrap_or(0),
        Err(e) => {
            refuse(out, session, hash, &e);
            return Ok(());
        }
    };
    let max = server.cfg.max_repo_attachment_bytes;
    if !server.attach_usage.reserve(name, size, max, || counted) {
        let detail = format!("repository {} would keep over {max} attachment bytes (--max-repo-attachment-bytes); nothing was stored", repo.name());
        refuse(out, session, hash, &limit("attachment bytes", detail));
        return Ok(());
    }
    let dir = place.staging().clone();
    let tmp = dir.join(format!("tmp-{}-{}", std::process::id(), session.conn));
    let mut up = Upload {
        server: server.clone(),
        repo: repo.name().to_string(),
        hash,
        size,
        offset: 0,
        file: None,
        hasher: Sha256Stream::new(),
        tmp: tmp.clone(),
        place,
        done: false,
        at: Instant::now(),
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
        return finish(out, session, up).await;
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
pub async fn chunk(
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
    up.at = Instant::now();
    if up.offset < up.size {
        return Ok(());
    }
    let up = upload.take().expect("checked above");
    finish(out, session, up).await
}

/// The last byte arrived: check the SHA-256, then store (the file store: fsync, name the file
/// by its hash, fsync the directory; PostgreSQL: one transaction), and say so (`AttachWant`
/// with offset = size). A mismatch stores nothing.
async fn finish(out: &Outbox, session: &Session, mut up: Upload) -> Result<(), Ended> {
    let hasher = std::mem::take(&mut up.hasher);
    if hasher.finish() != up.hash {
        let e = Error::Signature {
            kind: SignatureErrorKind::Tampered,
            detail: "the uploaded bytes' SHA-256 is not the offered hash; nothing was stored"
                .into(),
        };
        let hash = up.hash;
        drop(up); // removes the file, before the client is told
        refuse(out, session, hash, &e);
        return Ok(());
    }
    let file = up.file.take().expect("an upload under way has its file");
    if let Place::Pg(pg, _) = up.place.clone() {
        let max = up.server.cfg.max_repo_attachment_bytes;
        let put = file.sync_all().map_err(io);
        let put = match put {
            Ok(()) => {
                pg.put_attachment(&up.repo, &up.hash, up.size, &up.tmp, max)
                    .await
            }
            Err(e) => Err(e),
        };
        match put {
            Ok(Put::Stored) => {}
            Ok(Put::Held) => up.server.attach_usage.release(&up.repo, up.size),
            Ok(Put::OverLimit(total)) => {
                let detail = format!("repository {} keeps {total} attachment bytes; {} more would be over {max} (--max-repo-attachment-bytes); nothing was stored", up.repo, up.size);
                fail(out, session, up, &limit("attachment bytes", detail));
                return Ok(());
            }
            Err(e) => {
                fail(out, session, up, &e);
                return Ok(());
            }
        }
        // Stored (or held): the staged file goes, the reservation stays counted.
        let _ = std::fs::remove_file(&up.tmp);
        up.done = true;
        return stored(out, session, &up);
    }
    let path = up.tmp.with_file_name(hex(&up.hash));
    let path = &path;
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
            fail(out, session, up, &io(e));
            return Ok(());
        }
    }
    self::stored(out, session, &up)
}

/// Refuse an upload: its file is removed (and its reservation given back) first.
fn fail(out: &Outbox, session: &Session, up: Upload, e: &Error) {
    let hash = up.hash;
    drop(up);
    refuse(out, session, hash, e);
}

fn stored(out: &Outbox, session: &Session, up: &Upload) -> Result<(), Ended> {
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

/// `AttachGet`: authorize, then stream the window `offset .. offset + length` (within the size)
/// in chunks, each queued once the connection's queue is under half full (the socket is not
/// read meanwhile).
pub async fn get(
    server: &Arc<Server>,
    (out, repo, session): (&Outbox, &RepoHandle, &Session),
    hash: [u8; 32],
    size: u64,
    (offset, length): (u64, u64),
) -> Result<(), Ended> {
    let end = size.min(offset.saturating_add(length));
    let place = match authorize(server, repo, session, (hash, size), false).await? {
        Ok(place) => place,
        Err(e) => {
            refuse(out, session, hash, &e);
            return Ok(());
        }
    };
    let missing = || Error::Unavailable {
        detail: "the server does not hold these attachment bytes (not uploaded yet)".into(),
    };
    match place.holds(repo.name(), &hash, size).await {
        Ok(true) => {}
        Ok(false) => {
            refuse(out, session, hash, &missing());
            return Ok(());
        }
        Err(e) => {
            refuse(out, session, hash, &e);
            return Ok(());
        }
    }
    let mut file = match &place {
        Place::Files(dir) => match File::open(dir.join(hex(&hash))) {
            Ok(f) => Some(f),
            Err(e) => {
                refuse(out, session, hash, &io(e));
                return Ok(());
            }
        },
        Place::Pg(..) => None,
    };
    if end <= offset {
        // Nothing to send (an empty file, or an empty window): one empty chunk says so.
        let m = Message::AttachChunk {
            hash,
            offset,
            bytes: Vec::new(),
        };
        out.force(Bytes::from(m.encode()));
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
        let n = (end - at).min(ATTACH_CHUNK_BYTES as u64) as usize;
        let read = match (&mut file, &place) {
            (Some(f), _) => f
                .seek(SeekFrom::Start(at))
                .and_then(|_| f.read_exact(&mut buf[..n]))
                .map(|()| buf[..n].to_vec())
                .map_err(io),
            (None, Place::Pg(pg, _)) => {
                // Chunk rows are ATTACH_CHUNK_BYTES long: `at` falls in row at / CHUNK.
                let (idx, skip) = (
                    at / ATTACH_CHUNK_BYTES as u64,
                    (at % ATTACH_CHUNK_BYTES as u64) as usize,
                );
                match pg.attachment_chunk(repo.name(), &hash, idx).await {
                    Ok(Some(row))
                        if row.len() > skip && (size - at) as usize >= row.len() - skip =>
                    {
                        Ok(row[skip..(skip + n).min(row.len())].to_vec())
                    }
                    Ok(_) => Err(missing()),
                    Err(e) => Err(e),
                }
            }
            (None, Place::Files(_)) => unreachable!("a file store download has its file"),
        };
        let bytes = match read {
            Ok(b) => b,
            Err(e) => {
                refuse(out, session, hash, &e);
                return Ok(());
            }
        };
        let len = bytes.len() as u64;
        let m = Message::AttachChunk {
            hash,
            offset: at,
            bytes,
        };
        if !out.push(Bytes::from(m.encode())) {
            return Err(Ended::Closed("queue full during a download"));
        }
        at += len;
        if at >= end {
            return Ok(());
        }
    }
}
