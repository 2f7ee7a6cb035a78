#!/usr/bin/env node
// Static file server for ibexdb development: serves the repository root on 127.0.0.1.
//
// Why not `python -m http.server` or `npx serve`: SharedArrayBuffer and the 5 µs
// `performance.now()` resolution the benchmark needs require a cross-origin isolated page, i.e.
// COOP/COEP headers on every response. No dependencies, so it runs before `npm ci`.
//
//   node scripts/serve.mjs            # http://127.0.0.1:8080/  (PORT=9000 to change)
//   import { startServer } from './serve.mjs'   # programmatic use (port 0 = pick a free port)
//
// The shipping tests and `make demo` also use it as a *plain* static server, the kind a user
// deploys to: `isolation: false` (no COOP/COEP), a `mount` path (`/apps/notes/`), extra `headers`
// (a Content-Security-Policy, CORS for a "CDN" origin) and `tls` (https with a self-signed cert).
//
// Compression (`compress: true`; on for `make serve` and `make demo`, off by default for
// programmatic use so the benchmark runner keeps measuring what it always measured): `.wasm`, JS
// and other text files go out brotli- or gzip-encoded when the request's Accept-Encoding allows,
// from a precompressed sibling (`x.wasm.br`, `x.wasm.gz`, as `make pkg` writes them) when there
// is one at least as new as the file, else compressed here once and kept in memory; always with
// `Vary: Accept-Encoding` and the file's own Content-Type (`application/wasm`).

import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { encodedBody, negotiate } from './serve-compress.mjs';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8', // served as text: browsers don't run TS; useful for .d.ts viewing
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
};

// Headers on every response (errors included): no caching, so a rebuilt pkg/ibexdb_bg.wasm is
// always picked up and benchmark runs never see stale files; and, unless `isolation: false`,
// cross-origin isolation.
const BASE_HEADERS = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
};
const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/**
 * Map a URL path to a file under `root`, or return null when the path must be refused:
 * anything that resolves outside the root (`..`, encoded slashes, symlinks pointing out) and
 * dot-files/dot-directories (.git, .ci, ...).
 */
async function resolveFile(root, realRoot, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  const segments = decoded.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '..' || s.startsWith('.') || s.includes('\\'))) return null;
  const candidate = path.resolve(root, ...segments);
  if (candidate !== root && !candidate.startsWith(root + path.sep)) return null;
  let real;
  try {
    real = await fs.realpath(candidate);
  } catch {
    return { missing: true };
  }
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return null;
  return { file: real };
}

/**
 * Start the server. Resolves to { server, port, url, close() } once listening.
 *
 * Options: `root` (the folder served), `port` (0 = any free one), `host`, `log`,
 * `isolation` (COOP/COEP/CORP headers; default true), `headers` (more headers on every response),
 * `mount` (the URL path the root is served under, e.g. '/apps/notes/'; other paths are 404),
 * `tls` ({key, cert}: https), `compress` (brotli/gzip by Accept-Encoding; default false).
 */
export async function startServer({
  root = REPO_ROOT,
  port = 8080,
  host = '127.0.0.1',
  log = false,
  isolation = true,
  headers = {},
  mount = '/',
  tls = null,
  compress = false,
} = {}) {
  root = path.resolve(root);
  const realRoot = await fs.realpath(root);
  if (!mount.startsWith('/') || !mount.endsWith('/')) throw new Error(`mount must start and end with '/', got ${mount}`);
  const common = { ...BASE_HEADERS, ...(isolation ? ISOLATION_HEADERS : {}), ...headers };
  const send = (res, status, body, extra = {}) => {
    res.writeHead(status, { ...common, 'Content-Type': 'text/plain; charset=utf-8', ...extra });
    res.end(body);
  };

  const handler = async (req, res) => {
    const started = Date.now();
    if (log) res.on('finish', () => console.log(`${req.method} ${req.url} ${res.statusCode} ${Date.now() - started}ms`));
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return send(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
      }
      const url = new URL(req.url, 'http://localhost');
      if (url.pathname === '/' && root === REPO_ROOT && mount === '/') {
        return send(res, 302, 'see /www/\n', { Location: '/www/' });
      }
      if (url.pathname + '/' === mount) return send(res, 301, 'moved\n', { Location: mount + url.search });
      if (!url.pathname.startsWith(mount)) return send(res, 404, `not found: ${url.pathname}\n`);
      const target = await resolveFile(root, realRoot, url.pathname.slice(mount.length - 1));
      if (target === null) return send(res, 403, 'forbidden\n');
      if (target.missing) return send(res, 404, `not found: ${url.pathname}\n`);

      let file = target.file;
      let st = await fs.stat(file);
      if (st.isDirectory()) {
        // Directories need a trailing slash so relative URLs inside index.html resolve correctly.
        if (!url.pathname.endsWith('/')) {
          return send(res, 301, 'moved\n', { Location: url.pathname + '/' + url.search });
        }
        file = path.join(file, 'index.html');
        try {
          st = await fs.stat(file);
        } catch {
          return send(res, 404, `no index.html in ${url.pathname}\n`);
        }
      }
      if (!st.isFile()) return send(res, 403, 'forbidden\n');

      const type = MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
      const encoding = compress ? negotiate(file, st.size, req.headers['accept-encoding']) : null;
      if (encoding?.name) {
        const body = await encodedBody(file, st, encoding.name, realRoot);
        res.writeHead(200, { ...common, 'Content-Type': type, 'Content-Encoding': encoding.name, Vary: 'Accept-Encoding', 'Content-Length': body.size });
        if (req.method === 'HEAD') return res.end();
        if (body.bytes) return res.end(body.bytes);
        return createReadStream(/** @type {string} */ (body.file)).on('error', (err) => res.destroy(err)).pipe(res);
      }
      res.writeHead(200, { ...common, 'Content-Type': type, 'Content-Length': st.size, ...(encoding ? { Vary: 'Accept-Encoding' } : {}) });
      if (req.method === 'HEAD') return res.end();
      createReadStream(file)
        .on('error', (err) => res.destroy(err))
        .pipe(res);
    } catch (err) {
      if (!res.headersSent) send(res, 500, `internal error: ${err.message}\n`);
      else res.destroy(err);
    }
  };
  const server = tls ? createTlsServer(tls, handler) : createServer(handler);

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const actualPort = server.address().port;
  return {
    server,
    port: actualPort,
    url: `${tls ? 'https' : 'http'}://${host}:${actualPort}`,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

// Run directly: serve in the foreground until Ctrl-C.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve.mjs: invalid PORT=${process.env.PORT}`);
    process.exit(2);
  }
  try {
    const { url } = await startServer({ port, log: Boolean(process.env.SERVE_LOG), compress: true });
    console.log(`serving ${REPO_ROOT} at ${url}/  (COOP/COEP on, brotli/gzip; benchmark: ${url}/www/bench/page/)`);
  } catch (err) {
    console.error(`serve.mjs: cannot listen on 127.0.0.1:${port}: ${err.message}`);
    process.exit(1);
  }
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
}
