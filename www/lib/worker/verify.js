// verify() with the seals' signatures checked by WebCrypto (docs/design.md §9). The engine's
// P-384 in wasm costs ~4 ms per seal (500 seals at 50,000 commits: ~2 s); WebCrypto ~0.4–0.7 ms.
// So verify():
//
// 1. lists every seal of the log (`sealChecksAll`: author key, message and signature each, and
//    the log length the list covers);
// 2. starts every WebCrypto verification at once, on a helper thread (./crypto.js,
//    ./verify-thread.js: Chromium runs WebCrypto's ECDSA on the calling thread; keys imported
//    once per author), or on this thread where no helper can start;
// 3. meanwhile runs the engine's verify with those signatures taken as proven
//    (`verifyVouchedJson`: frame checksums, commit hashes, every signed commit sealed by its
//    author, the seals' repository, the permission rule, snapshot and state equal to a replay,
//    indexes and running aggregates);
// 4. keeps that outcome (the report, or the typed error) only if every signature verified.
//    Otherwise (a signature does not verify, WebCrypto is missing or fails, the log has no
//    seals or does not list) the engine's own `verify()` runs and reports: a tampered seal is
//    the same typed error as without WebCrypto.
//
// The report says who verified the signatures: `signatureEngine` 'webcrypto' or 'core'.
// Nothing may write to the engine between steps 1 and 3: the worker runs this inside a batch
// on its work chain (./batch.js); the benchmark adapter calls it alone.

import { PanicError } from '../errors.js';

/** @typedef {import('../engine.js').EngineHandle} EngineHandle */
/** @typedef {import('./crypto.js').HostCrypto} HostCrypto */
/** @typedef {import('./crypto.js').SealCheck} SealCheck */
/** @typedef {import('../ibexdb.js').VerifyReport} VerifyReport */
/** What the engine's vouched verify gave. @typedef {{report: VerifyReport} | {error: unknown}} Outcome */

/**
 * Re-prove the repository, seal signatures with WebCrypto when it can.
 * @param {EngineHandle} engine
 * @param {HostCrypto | null} host WebCrypto (null: not available here)
 * @returns {Promise<VerifyReport>}
 */
export async function verifyRepository(engine, host) {
  const outcome = host ? await vouchedVerify(engine, host) : null;
  if (!outcome) return coreVerify(engine);
  if ('error' in outcome) throw outcome.error;
  return outcome.report;
}

/**
 * The engine's own verify(), every signature in wasm.
 * @param {EngineHandle} engine
 * @returns {VerifyReport}
 */
function coreVerify(engine) {
  return finish(JSON.parse(engine.verifyJson()), 'core');
}

/**
 * Steps 1–4 above; null when the engine must verify the signatures itself.
 * @param {EngineHandle} engine
 * @param {HostCrypto} host
 * @returns {Promise<Outcome | null>}
 */
async function vouchedVerify(engine, host) {
  const listed = listSeals(engine);
  if (!listed || listed.checks.length === 0) return null;
  // The helper thread is known before the engine runs (it blocks this thread until done). The
  // work chain is held meanwhile: nothing writes to the engine while the page answers.
  await host.helperReady();
  const signatures = host.verifyBeside(engine, listed.checks);
  const outcome = runVouched(engine, listed.logLength);
  if (!(await signatures)) return null;
  if (!('raw' in outcome)) return outcome;
  // Every listed seal was taken as proven: the log the engine replayed is the one listed.
  if (outcome.raw.signaturesVouched !== listed.checks.length) return null;
  return { report: finish(outcome.raw, 'webcrypto') };
}

/**
 * Step 1; null when the log does not list (the engine's verify() reports why).
 * @param {EngineHandle} engine
 * @returns {{logLength: number, checks: SealCheck[]} | null}
 */
function listSeals(engine) {
  try {
    return engine.sealChecksAll();
  } catch (e) {
    if (e instanceof PanicError) throw e;
    return null;
  }
}

/**
 * Step 3: the engine's verify with the listed signatures taken as proven: its JSON report, or
 * its error. A panic is thrown (the batch recovers the engine).
 * @param {EngineHandle} engine
 * @param {number} logLength
 * @returns {{raw: any} | {error: unknown}}
 */
function runVouched(engine, logLength) {
  try {
    return { raw: JSON.parse(engine.verifyVouchedJson(logLength)) };
  } catch (e) {
    if (e instanceof PanicError) throw e;
    return { error: e };
  }
}

/**
 * The engine's report as `db.verify()` gives it: every proven signature in
 * `signaturesVerified`, and who verified them.
 * @param {any} raw the engine's JSON report
 * @param {'webcrypto' | 'core'} by
 * @returns {VerifyReport}
 */
function finish(raw, by) {
  const { signaturesVouched = 0, ...report } = raw;
  return { ...report, signaturesVerified: report.signaturesVerified + signaturesVouched, signatureEngine: by };
}
