//! Fetching a JWKS over HTTP(S) for `--auth-jwks URL` (docs/design.md §12.4, "A JWKS URL"): one
//! `GET` over HTTP/1.1 (`Connection: close`), on the crates the server already links (tokio for
//! the socket, tokio-rustls with ring for TLS; no HTTP client crate). Bounded: the whole fetch
//! (DNS, connect, TLS, request, response) within `FETCH_TIMEOUT`, the response head within
//! `MAX_HEAD_BYTES` and the body within `MAX_JWKS_BYTES` (a longer one is refused, never
//! buffered past the bound). Only `200` is accepted (redirects are not followed); the body may
//! be sent with `Content-Length`, chunked, or until the close.
//!
//! `https://` verifies the server's certificate against `--auth-jwks-ca FILE` (PEM) or, without
//! it, the system's bundle (`SSL_CERT_FILE`, else the usual paths); `http://` is accepted only
//! for a loopback address (`127.0.0.1`, `[::1]`, `localhost`): a JWKS fetched in clear text
//! over a network decides who may log in.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{crypto::ring, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// The longest JWKS body accepted (bytes); a provider's is a few KiB.
pub const MAX_JWKS_BYTES: usize = 256 << 10;
/// The longest response head accepted (bytes).
pub const MAX_HEAD_BYTES: usize = 16 << 10;
/// The whole fetch, from the DNS lookup to the last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the system's CA bundle usually is (Debian/Ubuntu/Alpine, Fedora/RHEL, openSUSE, macOS).
const SYSTEM_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Url {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// The path and query, from the `/`.
    pub path: String,
}

/// Whether `--auth-jwks`'s value is a URL (else a file).
pub fn is_url(v: &str) -> bool {
    v.starts_with("https://") || v.starts_with("http://")
}

/// Parse `url`: `https://HOST[:PORT][/PATH]`, or `http://` to a loopback host only.
pub fn parse(url: &str) -> Result<Url, String> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(format!("{url:?} is not an http:// or https:// URL"));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        return Err(format!("{url:?}: credentials in the URL are not supported"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let end = v6.find(']').ok_or(format!("{url:?}: unclosed [IPv6]"))?;
        let port = &v6[end + 1..];
        (
            v6[..end].to_string(),
            port.strip_prefix(':').unwrap_or(port),
        )
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (authority.to_string(), ""),
        }
    };
    if host.is_empty() || path.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(format!("{url:?}: no host, or a space in the path"));
    }
    let port = match port {
        "" if tls => 443,
        "" => 80,
        p => p.parse().map_err(|_| format!("{url:?}: bad port {p:?}"))?,
    };
    if !tls && !matches!(host.as_str(), "127.0.0.1" | "::1" | "localhost") {
        return Err(format!(
            "{url:?}: http:// only for a loopback address (127.0.0.1, [::1], localhost); use https://"
        ));
    }
    Ok(Url {
        tls,
        host,
        port,
        path,
    })
}

/// The TLS client for `https://` JWKS URLs: the roots of `ca` (PEM), else of the system bundle.
pub fn tls_connector(ca: Option<&Path>) -> Result<TlsConnector, String> {
    let file = match ca {
        Some(p) => p.to_path_buf(),
        None => system_bundle().ok_or(
            "no CA bundle for https:// JWKS URLs (set SSL_CERT_FILE or --auth-jwks-ca FILE)",
        )?,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&file)
        .and_then(|it| it.collect())
        .map_err(|e| format!("cannot read certificates from {}: {e}", file.display()))?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!("no usable CA certificate in {}", file.display()));
    }
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

fn system_bundle() -> Option<PathBuf> {
    if let Some(f) = std::env::var_os("SSL_CERT_FILE") {
        return Some(PathBuf::from(f));
    }
    SYSTEM_BUNDLES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// `GET url` within `FETCH_TIMEOUT`: the body of a `200` response of at most `MAX_JWKS_BYTES`.
pub async fn fetch(url: &Url, tls: Option<&TlsConnector>) -> Result<Vec<u8>, String> {
    tokio::time::timeout(FETCH_TIMEOUT, fetch_inner(url, tls))
        .await
        .map_err(|_| format!("no complete answer within {} s", FETCH_TIMEOUT.as_secs()))?
}

async fn fetch_inner(url: &Url, tls: Option<&TlsConnector>) -> Result<Vec<u8>, String> {
    let tcp = TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|e| format!("connect {}:{}: {e}", url.host, url.port))?;
    let _ = tcp.set_nodelay(true);
    if !url.tls {
        return exchange(tcp, url).await;
    }
    let connector = tls.ok_or("no TLS client configured")?;
    let name = ServerName::try_from(url.host.clone()).map_err(|e| format!("{e}"))?;
    let stream = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {}: {e}", url.host))?;
    exchange(stream, url).await
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    url: &Url,
) -> Result<Vec<u8>, String> {
    let host = if url.host.contains(':') {
        format!("[{}]", url.host)
    } else {
        url.host.clone()
    };
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nUser-Agent: ibexdb-server\r\nConnection: close\r\n\r\n",
        url.path
    );
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| format!("send: {e}"))?;
    // Read until the close, never more than the head and body bounds allow (+ chunk framing).
    let cap = MAX_HEAD_BYTES + MAX_JWKS_BYTES + MAX_JWKS_BYTES / 8 + 64;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        // A peer that closes without TLS close_notify: what came is judged by its framing.
        let n = match s.read(&mut chunk).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(format!("read: {e}")),
        };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > cap {
            return Err(format!("the response is over {MAX_JWKS_BYTES} bytes"));
        }
        if let Some(done) = complete(&buf, false)? {
            return Ok(done);
        }
    }
    complete(&buf, true)?.ok_or_else(|| "the response ended early".to_string())
}

/// The body once `buf` holds the whole response (`None`: more is needed); `closed`: the peer
/// closed after `buf` (a body without length or chunks ends there).
fn complete(buf: &[u8], closed: bool) -> Result<Option<Vec<u8>>, String> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        if buf.len() > MAX_HEAD_BYTES {
            return Err(format!("the response head is over {MAX_HEAD_BYTES} bytes"));
        }
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| "the response head is not text")?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    let code = status.split(' ').nth(1).unwrap_or("");
    if !status.starts_with("HTTP/1.") || code != "200" {
        return Err(format!("answered {status:?}, not 200"));
    }
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if k.eq_ignore_ascii_case("content-length") {
            let n: usize = v.parse().map_err(|_| "a bad Content-Length")?;
            if n > MAX_JWKS_BYTES {
                return Err(format!("Content-Length {n} is over {MAX_JWKS_BYTES} bytes"));
            }
            length = Some(n);
        } else if k.eq_ignore_ascii_case("transfer-encoding") {
            chunked = v.to_ascii_lowercase().contains("chunked");
        }
    }
    let body = &buf[end + 4..];
    if chunked {
        return dechunk(body);
    }
    if body.len() > MAX_JWKS_BYTES {
        return Err(format!("the body is over {MAX_JWKS_BYTES} bytes"));
    }
    match length {
        Some(n) if body.len() >= n => Ok(Some(body[..n].to_vec())),
        Some(_) => Ok(None),
        // Until the close: whole only once the peer closed.
        None => Ok(closed.then(|| body.to_vec())),
    }
}

/// A chunked body, once its last chunk came.
fn dechunk(mut b: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size = std::str::from_utf8(&b[..eol]).map_err(|_| "a bad chunk size")?;
        let size = size.split(';').next().unwrap_or("").trim();
        let n = usize::from_str_radix(size, 16).map_err(|_| "a bad chunk size")?;
        if out.len() + n > MAX_JWKS_BYTES {
            return Err(format!("the body is over {MAX_JWKS_BYTES} bytes"));
        }
        if n == 0 {
            return Ok(Some(out));
        }
        let data = &b[eol + 2..];
        if data.len() < n + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&data[..n]);
        b = &data[n + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_clear_text_is_loopback_only() {
        let u = parse("https://login.example.com/.well-known/jwks.json").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port),
            (true, "login.example.com", 443)
        );
        assert_eq!(u.path, "/.well-known/jwks.json");
        let u = parse("http://127.0.0.1:8401/k?x=1").unwrap();
        assert_eq!((u.port, u.path.as_str()), (8401, "/k?x=1"));
        assert_eq!(parse("http://[::1]:9/").unwrap().host, "::1");
        assert!(parse("http://login.example.com/jwks").is_err());
        assert!(parse("http://10.0.0.1/jwks").is_err());
        assert!(parse("https://user:pw@x.example/").is_err());
        assert!(parse("ftp://x/").is_err());
        assert!(parse("https://x:99999/").is_err());
    }

    #[test]
    fn bodies_by_length_chunks_and_bounds() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(complete(r, false).unwrap(), Some(b"{}".to_vec()));
        assert_eq!(complete(&r[..r.len() - 1], false).unwrap(), None);
        let c =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n";
        assert_eq!(complete(c, false).unwrap(), Some(b"{}".to_vec()));
        assert!(complete(b"HTTP/1.1 302 Found\r\nLocation: x\r\n\r\n", false).is_err());
        let big = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            MAX_JWKS_BYTES + 1
        );
        assert!(complete(big.as_bytes(), false).is_err());
        let huge_chunk = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            MAX_JWKS_BYTES + 1
        );
        assert!(complete(huge_chunk.as_bytes(), false).is_err());
        let open_ended = b"HTTP/1.1 200 OK\r\n\r\n{}";
        assert_eq!(complete(open_ended, false).unwrap(), None);
        assert_eq!(complete(open_ended, true).unwrap(), Some(b"{}".to_vec()));
    }
}
