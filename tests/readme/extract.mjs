// Reading a README the way tests/readme/ needs it: the shell commands it shows, its fenced code
// blocks, and the code spans of one section.
//
// A command is
// - a line of a ```sh fenced block (a trailing `# comment` dropped, `\` joining lines), or
// - a code span in the prose that starts with a program a reader would run (make, cargo, npm,
//   npx, node, ibexdb-server, ibexdb-load, or a path under target/), optionally after VAR=value
//   assignments, with at least one argument: `make` alone names a program, `make demo` is a
//   command.
// So that no command hides from the test, a fence must name its language (sh, html, js, …) and
// an indented code block is an error (write a ```sh fence instead).

import { readFileSync } from 'node:fs';

const SHELL_LANGS = new Set(['sh', 'bash', 'shell']);
const PROGRAM = /^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:make|cargo|npm|npx|node|ibexdb-server|ibexdb-load|target\/\S+)\s+\S/;

/**
 * @typedef {{file: string, line: number, text: string, from: 'block' | 'span'}} Command
 * @typedef {{lang: string, line: number, text: string}} Block
 * @typedef {{line: number, text: string, heading: string}} Paragraph  prose, lines joined by spaces
 */

/**
 * Split a Markdown file into fenced blocks and prose paragraphs (each under its heading).
 * @param {string} file
 * @returns {{blocks: Block[], paragraphs: Paragraph[], errors: string[]}}
 */
export function parse(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  /** @type {Block[]} */
  const blocks = [];
  /** @type {Paragraph[]} */
  const paragraphs = [];
  const errors = [];
  let heading = '';
  /** @type {Block | null} */
  let fence = null;
  /** @type {Paragraph | null} */
  let para = null;
  let prevBlank = true;
  lines.forEach((raw, i) => {
    const n = i + 1;
    const open = /^\s{0,3}```\s*(\S*)\s*$/.exec(raw);
    if (fence) {
      if (open && open[1] === '') {
        blocks.push(fence);
        fence = null;
      } else {
        fence.text += (fence.text ? '\n' : '') + raw;
      }
      return;
    }
    if (open) {
      para = null;
      if (!open[1]) errors.push(`${file}:${n}: a fence without a language (write \`\`\`sh for commands)`);
      fence = { lang: open[1] || '?', line: n, text: '' };
      return;
    }
    if (raw.trim() === '') {
      para = null;
      prevBlank = true;
      return;
    }
    if (prevBlank && /^( {4}|\t)\S/.test(raw) && !para) {
      errors.push(`${file}:${n}: an indented code block (write a \`\`\`sh fence, so the command test sees it)`);
    }
    prevBlank = false;
    const h = /^(#{1,6})\s+(.*)$/.exec(raw);
    if (h) {
      heading = h[2].trim();
      para = null;
      return;
    }
    // A list item starts a paragraph of its own (a span never spans two items).
    if (!para || /^\s*[-*]\s/.test(raw) || /^\|/.test(raw)) {
      para = { line: n, text: raw.trim(), heading };
      paragraphs.push(para);
    } else {
      para.text += ' ' + raw.trim();
    }
  });
  if (fence) errors.push(`${file}:${fence.line}: a fence that is never closed`);
  return { blocks, paragraphs, errors };
}

/** @param {string} text */
export function spans(text) {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1].trim());
}

/** A shell line without its trailing comment (a `#` after a space, outside quotes). @param {string} line */
function stripComment(line) {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) {
      return line.slice(0, i).trimEnd();
    }
  }
  return line.trimEnd();
}

/**
 * Every command the file shows, in order, with where it is.
 * @param {string} file
 * @returns {{commands: Command[], errors: string[]}}
 */
export function commands(file) {
  const { blocks, paragraphs, errors } = parse(file);
  /** @type {Command[]} */
  const out = [];
  for (const b of blocks.filter((b) => SHELL_LANGS.has(b.lang))) {
    let pending = '';
    b.text.split('\n').forEach((raw, i) => {
      const line = stripComment(raw);
      if (line.endsWith('\\')) {
        pending += line.slice(0, -1) + ' ';
        return;
      }
      const text = (pending + line).replace(/\s+/g, ' ').trim();
      pending = '';
      if (text) out.push({ file, line: b.line + 1 + i, text, from: 'block' });
    });
  }
  for (const p of paragraphs) {
    for (const s of spans(p.text)) if (PROGRAM.test(s)) out.push({ file, line: p.line, text: s.replace(/\s+/g, ' '), from: 'span' });
  }
  return { commands: out, errors };
}

/**
 * The code spans of the section under the heading that matches `heading` (to the next heading).
 * @param {string} file
 * @param {RegExp} heading
 */
export function sectionSpans(file, heading) {
  const { paragraphs } = parse(file);
  const inside = paragraphs.filter((p) => heading.test(p.heading));
  return inside.flatMap((p) => spans(p.text));
}

/**
 * The fenced blocks of a language.
 * @param {string} file
 * @param {string} lang
 */
export function fenced(file, lang) {
  return parse(file).blocks.filter((b) => b.lang === lang);
}
