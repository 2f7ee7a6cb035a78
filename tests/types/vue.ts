// Type tests of ibexdb/vue (www/lib/vue.d.ts) (`make tsc`). Never run.
import { defineComponent, h, ref } from 'vue';
import type { Database, SyncStatus } from '../../www/ibexdb.js';
import { provideDatabase, useItem, useLive, useSyncStatus, useDatabase } from '../../www/lib/vue.js';

interface Task {
  title: string;
  done: boolean;
  priority: number;
}

export const Board = defineComponent({
  props: { db: { type: Object as () => Database | null, default: null } },
  setup(props) {
    provideDatabase(() => props.db);
    const search = ref('');
    const { rows, loading, error } = useLive<Task>(() => ({ collection: 'tasks', where: { title: { includes: search.value } }, sort: ['priority'] }));
    const item = useItem<Task>('tasks/1');
    const status = useSyncStatus();
    const db = useDatabase();
    return () => {
      const titles: string[] = rows.value.map((r) => r.value.title);
      const p: number | undefined = item.value.value?.priority;
      const st: SyncStatus | null = status.value;
      const d: Database | null = db.value;
      // @ts-expect-error an item may be missing
      void item.value.value.title;
      // @ts-expect-error rows are read-only
      rows.value = [];
      return h('p', null, `${titles.join()} ${p} ${st?.state} ${loading.value} ${error.value?.name} ${!!d}`);
    };
  },
});

export function misuse() {
  // @ts-expect-error an unknown field in a typed where
  useLive<Task>({ collection: 'tasks', where: { titel: 'x' } });
  // @ts-expect-error a getter must return a query
  useLive<Task>(() => 42);
  // @ts-expect-error a key is a string
  useItem(7);
}
