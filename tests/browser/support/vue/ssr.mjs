// Server rendering of ibexdb/vue in Node (tests/browser/vue.spec.ts runs it): vue/server-renderer
// renders a component that uses every composable, with a database whose every property access
// is recorded and with Worker, OPFS and IndexedDB replaced by traps. Prints what was rendered
// and what was touched (nothing may be).
import { createSSRApp, defineComponent, h } from 'vue';
import { renderToString } from 'vue/server-renderer';

const touched = [];
globalThis.Worker = class {
  constructor() {
    touched.push('Worker');
    throw new Error('a Worker on the server');
  }
};
Object.defineProperty(globalThis, 'navigator', {
  value: {
    storage: {
      getDirectory() {
        touched.push('OPFS');
        throw new Error('OPFS on the server');
      },
    },
  },
  configurable: true,
});
Object.defineProperty(globalThis, 'indexedDB', {
  get() {
    touched.push('indexedDB');
    return undefined;
  },
  configurable: true,
});

const { provideDatabase, useItem, useLive, useSyncStatus } = await import('../../../../www/lib/vue.js');

const db = new Proxy(
  {},
  {
    get(_target, prop) {
      if (prop === '__v_skip' || prop === '__v_isRef' || prop === '__v_raw' || prop === '__v_isReactive' || prop === '__v_isReadonly' || prop === '__v_isShallow') return undefined; // Vue's own checks of a value
      touched.push(`db.${String(prop)}`);
      return () => {
        throw new Error(`db.${String(prop)} on the server`);
      };
    },
  },
);

const Board = defineComponent({
  setup() {
    const live = useLive({ collection: 'tasks', where: { done: false } });
    const item = useItem('tasks/1');
    const status = useSyncStatus();
    return () => h('p', null, `live ${live.loading.value} ${live.rows.value.length} ${live.error.value}; item ${item.loading.value} ${item.value.value}; sync ${status.value?.state ?? 'unknown'}`);
  },
});

const App = (/** @type {any} */ withDb) =>
  defineComponent({
    setup() {
      provideDatabase(withDb);
      return () => h(Board);
    },
  });

const withDb = await renderToString(createSSRApp(App(db)));
const withoutDb = await renderToString(createSSRApp(App(null)));
console.log(JSON.stringify({ withDb, withoutDb, touched }));
