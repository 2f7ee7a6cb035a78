// The Vue test page's module: Vue, ibexdb and ibexdb/vue on `window.t`, with the shared
// counter of live queries (../count-live.js).
import * as Vue from 'vue';
import * as ibexdb from 'ibexdb';
import * as composables from 'ibexdb/vue';
import { countLive } from '../count-live.js';

window.t = { Vue, ibexdb, composables, countLive };
document.body.dataset.ready = '1';
