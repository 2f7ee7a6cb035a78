// Progress on the page: the log pane, the status line and window.benchProgress (the runner polls it).

const logEl = () => document.getElementById('log');
const statusEl = () => document.getElementById('status');
export function log(msg) {
  console.log(`[bench] ${msg}`);
  const el = logEl();
  if (el) {
    el.textContent += `${msg}\n`;
    el.scrollTop = el.scrollHeight;
  }
}
export function setStatus(msg) {
  const el = statusEl();
  if (el) el.textContent = msg;
  window.benchProgress = msg;
}
