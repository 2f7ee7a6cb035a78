// What the benchmark page puts on `window` (and reads from the runner, scripts/bench.mjs), for the
// type check of www/bench (`make tsc`).
interface Window {
  runBench?: (options?: object) => Promise<any>;
  benchTableLines?: (results: any, size?: number) => any[];
  listBenchEngines?: () => Promise<any[]>;
  benchReady?: boolean;
  benchRunning?: boolean;
  benchProgress?: string;
  benchResults?: any;
  /** Absolute URLs of optional engine files probed with HEAD and found missing (expected 404s). */
  benchExpected404?: string[];
  /** The runner's choice of ibexdb's public module for the [page] rows (the built npm package's ibexdb.js); unset: www/ibexdb.js. */
  benchPublicModule?: string;
  /** The runner's CDP hook: a worker's JS heap by worker name. */
  benchWorkerHeap?: (name: string) => Promise<{ usedSize: number; totalSize: number } | null>;
}

interface Navigator {
  /** Chromium's Device Memory API (GiB, coarse). */
  readonly deviceMemory?: number;
}

interface Window {
  /** cold.js: the outcome of this page's one cold start. */
  coldResult?: { ms?: number; ok?: boolean; error?: string; sinceNavigationStart?: number; crossOriginIsolated?: boolean };
  /** The runner's hook: open `url` in a fresh page of the same browser context and return its coldResult. */
  benchColdPage?: (url: string) => Promise<Window['coldResult'] & { errors?: string[] }>;
}
