#!/usr/bin/env node
// The READMEs' API lists against the public types: every public method and property of
// `Database` and every `OpenOptions` field that www/lib/ibexdb.d.ts declares must appear as a
// code span in the API section of README.md ("The API") and of the package's README
// (www/lib/README.md, "API"); and every call the lists show (`grant(publicKey, role)`) must be a
// method of `Database` or a function the module exports. Run by `make test` (make test-readme).
//
//   node tests/readme/api-lists.mjs

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sectionSpans } from './extract.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TYPES = path.join(REPO, 'www/lib/ibexdb.d.ts');
const READMES = [
  { file: 'README.md', section: /^The API$/ },
  { file: 'www/lib/README.md', section: /^API$/ },
];

/**
 * The names declared at the top level of a class or interface body (two-space indent), in order.
 * @param {string} text the .d.ts
 * @param {RegExp} head the line that opens the body
 */
export function members(text, head) {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => head.test(l));
  if (start < 0) throw new Error(`${path.relative(REPO, TYPES)}: no ${head}`);
  const names = [];
  for (const line of lines.slice(start + 1)) {
    if (/^\}/.test(line)) return names;
    const m = /^ {2}(?:readonly\s+)?([A-Za-z]\w*)\??\s*[<(:]/.exec(line);
    if (m && !names.includes(m[1])) names.push(m[1]);
  }
  throw new Error(`${path.relative(REPO, TYPES)}: ${head} is never closed`);
}

/** What the lists must name and may call. */
export function publicApi() {
  const text = readFileSync(TYPES, 'utf8');
  const database = members(text, /^export declare class Database \{/);
  const options = members(text, /^export interface OpenOptions \{/);
  const functions = [...text.matchAll(/^export declare function (\w+)/gm)].map((m) => m[1]);
  return { database, options, functions };
}

/** Problems of one README's API list (empty: none). @param {{file: string, section: RegExp}} readme @param {ReturnType<typeof publicApi>} api */
export function checkList(readme, api) {
  const found = sectionSpans(path.join(REPO, readme.file), readme.section);
  if (found.length === 0) return [`${readme.file}: no section headed ${readme.section} with code spans`];
  const named = new Set(found.map((s) => /^[A-Za-z_]\w*/.exec(s)?.[0]).filter(Boolean));
  const problems = [];
  for (const m of api.database) if (!named.has(m)) problems.push(`${readme.file}: Database.${m} is not in its API list`);
  for (const o of api.options) if (!named.has(o)) problems.push(`${readme.file}: the open() option ${o} is not in its API list`);
  for (const s of found) {
    const call = /^([A-Za-z_]\w*)\(/.exec(s)?.[1];
    if (call && !api.database.includes(call) && !api.functions.includes(call)) {
      problems.push(`${readme.file}: its API list shows \`${s}\`, which is neither a Database method nor a function of the module`);
    }
  }
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const api = publicApi();
  const problems = READMES.flatMap((r) => checkList(r, api));
  if (problems.length) {
    console.error(`api-lists: the READMEs' API lists and www/lib/ibexdb.d.ts disagree:\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`api-lists: ${READMES.map((r) => r.file).join(' and ')} list all ${api.database.length} members of Database and all ${api.options.length} open() options (${api.options.join(', ')})`);
}
