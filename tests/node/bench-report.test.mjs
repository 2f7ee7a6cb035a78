// The benchmark report's ratios (www/bench/page/report.js), from the outside: a results object as
// the page produces it, and what the table must say (issue 24 §1): a ratio on the p50 and on the
// mean, the worse one quoted; reads against every SQLite configuration; writes against the same
// durability; no ratio on relaxed writes; the noise floor from two engines doing identical reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { markdownTables, noiseFloor, ratios, renderReport, textTable } from '../../www/bench/page/report.js';
import { seedsMarkdown } from '../../www/bench/page/seeds.js';

const engines = [
  { id: 'sqlite-tuned', family: 'sqlite', durability: 'full' },
  { id: 'sqlite-tuned-off', family: 'sqlite', durability: 'relaxed' },
  { id: 'sqlite-best', family: 'sqlite', durability: 'full' },
  { id: 'ibexdb', family: 'ibexdb', durability: 'full' },
  { id: 'ibexdb-relaxed', family: 'ibexdb', durability: 'relaxed' },
];
const cell = (p50, mean = p50) => ({ n: 20, k: 1, p50, p95: Math.max(p50, mean), min: p50, max: mean * 2, mean });
/** One dataset run per engine at N = 100: read-by-id and create-item cells. */
function results(cells) {
  return {
    meta: {},
    options: { sizes: [100] },
    engines,
    runs: engines.map((e) => ({ engine: e.id, family: e.family, durability: e.durability, section: 'dataset', size: 100, errors: [], stats: {}, rows: Object.fromEntries(Object.entries(cells).map(([row, byEngine]) => [row, { worker: byEngine[e.id] }]).filter(([, v]) => v.worker)) })),
    errors: [],
  };
}
const line = (r, rowId, write) => ({ rowId, side: 'worker', label: rowId, cells: Object.fromEntries(r.runs.filter((x) => x.rows[rowId]).map((x) => [x.engine, x.rows[rowId].worker])), write, comparable: true });

test('a read row: the best of every SQLite engine, whatever its durability; the p50 and the mean each against its own best; the worse quoted', () => {
  const r = results({ 'read-by-id': { 'sqlite-tuned': cell(10, 12), 'sqlite-tuned-off': cell(8, 20), 'sqlite-best': cell(9, 9), ibexdb: cell(4, 18), 'ibexdb-relaxed': cell(4, 4) } });
  const got = ratios(r, line(r, 'read-by-id', false));
  assert.equal(got.ibexdb.vs, 'sqlite-tuned-off'); // the relaxed SQLite's reads count for the durable ibexdb
  assert.equal(got.ibexdb.ratio, 0.5);
  assert.equal(got.ibexdb.vsMean, 'sqlite-best');
  assert.equal(got.ibexdb.meanRatio, 2);
  assert.equal(got.ibexdb.worse, 2);
  assert.equal(got['ibexdb-relaxed'].ratio, 0.5); // a read of ibexdb-relaxed has a ratio
  const md = markdownTables(r);
  assert.match(md, /\*\*2\.00x\*\* \(p50 0\.50x, mean 2\.00x\)/);
});

test('a write row: the same durability only; relaxed writes get no ratio, and the table says why', () => {
  const r = results({ 'create-item': { 'sqlite-tuned': cell(1, 1.2), 'sqlite-tuned-off': cell(0.1), 'sqlite-best': cell(0.8, 2), ibexdb: cell(0.4, 1.2), 'ibexdb-relaxed': cell(0.01) } });
  const got = ratios(r, line(r, 'create-item', true));
  assert.equal(got.ibexdb.vs, 'sqlite-best');
  assert.equal(got.ibexdb.ratio, 0.5);
  assert.equal(got.ibexdb.vsMean, 'sqlite-tuned');
  assert.equal(got.ibexdb.meanRatio, 1);
  assert.ok(got['ibexdb-relaxed'].none);
  assert.match(textTable(r), /no ratio/);
  assert.match(markdownTables(r), /No ratio on the relaxed write rows: not the same guarantee/);
});

test('the noise floor: the spread of sqlite-tuned and sqlite-tuned-off on identical reads, shown in the report', () => {
  const r = results({
    'read-by-id': { 'sqlite-tuned': cell(10), 'sqlite-tuned-off': cell(15), ibexdb: cell(5) },
    'simple-query': { 'sqlite-tuned': cell(100), 'sqlite-tuned-off': cell(110), ibexdb: cell(50) },
    'create-item': { 'sqlite-tuned': cell(1), 'sqlite-tuned-off': cell(0.1), ibexdb: cell(0.5) },
  });
  const nf = noiseFloor(r);
  assert.equal(nf.lines, 2); // the write row is not identical work
  assert.equal(nf.worst.p50, 1.5);
  assert.equal(nf.medianP50, 1.1);
  const html = renderReport(r);
  assert.match(html, /Noise floor of this run/);
  assert.match(html, /on the p50 \(dot\) and on the mean \(ring\)/);
  assert.match(html, /seeds\.html/);
});

test('the seeds page quotes the published figures next to this run, in the same units', () => {
  const r = results({ 'read-by-id': { 'sqlite-tuned': cell(0.01), ibexdb: cell(0.002) } });
  const md = seedsMarkdown(r);
  assert.match(md, /GoatDB: its published browser table/);
  assert.match(md, /\| read item by id \| 500 ns|\| read item by id \| 0\.50 µs/);
  assert.match(md, /> 2,500 writes\/s/);
  assert.match(md, /none in our sources/);
});

test('results.json carries every ratio (p50, mean, worse, or why none)', async () => {
  const { ratioSummary } = await import('../../www/bench/page/report.js');
  const r = results({ 'create-item': { 'sqlite-tuned': cell(1, 2), ibexdb: cell(0.5, 3), 'ibexdb-relaxed': cell(0.01) } });
  const [sec] = ratioSummary(r);
  const l = sec.lines.find((x) => x.row === 'create-item');
  assert.deepEqual({ ratio: l.ratios.ibexdb.ratio, meanRatio: l.ratios.ibexdb.meanRatio, worse: l.ratios.ibexdb.worse }, { ratio: 0.5, meanRatio: 1.5, worse: 1.5 });
  assert.ok(l.ratios['ibexdb-relaxed'].none);
});
