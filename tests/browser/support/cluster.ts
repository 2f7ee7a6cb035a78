// A throwaway PostgreSQL and ibexdb-server nodes on it, on loopback ports, for the browser specs
// of scale-out sync (cluster.spec.ts). The same recipe as scripts/pg.sh and
// server/tests/common/pg.rs: initdb in a temporary directory (no fsync for the test's speed),
// a free 127.0.0.1 port, the socket in that directory, and as the unprivileged user `postgres`
// when the tests run as root (PostgreSQL refuses to run as root).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

const SERVER = process.env.IBEXDB_SERVER ?? path.resolve('target/release/ibexdb-server');

/** The newest PostgreSQL's bin directory ($IBEXDB_PG_BIN, else Debian's), or null when absent. */
export function pgBinDir(): string | null {
  if (process.env.IBEXDB_PG_BIN) return process.env.IBEXDB_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b));
  return versions.length ? path.join(root, versions[versions.length - 1], 'bin') : null;
}

const isRoot = () => userInfo().uid === 0;

/** Run a PostgreSQL program as the user that owns the cluster. */
function asOwner(bin: string, program: string, args: string[]) {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args]] : [path.join(bin, program), args];
  execFileSync(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
}

/** A free TCP port on 127.0.0.1 (free when asked: PostgreSQL takes it right after). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Postgres {
  url: string;
  stop(): void;
}

/** initdb and start a PostgreSQL of our own; `stop()` stops it and removes its files. */
export async function startPostgres(bin: string): Promise<Postgres> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-pg-browser-'));
  chmodSync(dir, 0o755);
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const data = path.join(dir, 'data');
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    asOwner(bin, 'initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
    const port = await freePort();
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100`;
    asOwner(bin, 'pg_ctl', ['-D', data, '-w', '-t', '30', '-l', path.join(dir, 'log'), '-o', opts, 'start']);
    const stop = () => {
      try {
        asOwner(bin, 'pg_ctl', ['-D', data, '-w', '-m', 'immediate', 'stop']);
      } finally {
        remove();
      }
    };
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
  } catch (e) {
    remove();
    throw e;
  }
}

export interface Node {
  /** ws://127.0.0.1:PORT (the node's own authority: session proofs name it). */
  url: string;
  proc: ChildProcess;
  /** SIGKILL: no goodbye to its clients, PostgreSQL's transactions of it abort. */
  kill(): void;
}

/** One ibexdb-server node on PostgreSQL `store`, on a free loopback port. */
export async function startNode(store: string): Promise<Node> {
  const proc = spawn(SERVER, ['--store', store, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code} (built? ${SERVER})`)));
      createInterface({ input: proc.stdout! }).once('line', resolve);
    });
    const m = /listening on (\S+)/.exec(line);
    if (!m) throw new Error(`unexpected server output: ${line}`);
    return { url: `ws://${m[1]}/`, proc, kill: () => proc.kill('SIGKILL') };
  } catch (e) {
    proc.kill('SIGKILL');
    throw e;
  }
}
