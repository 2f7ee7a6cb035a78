// The Svelte test page's module (bundled by build.ts): Svelte, svelte/store, svelte/legacy, the
// test components, ibexdb and ibexdb/svelte on `window.t`, with the shared counter of live
// queries (../count-live.js).
import * as Svelte from 'svelte';
import * as store from 'svelte/store';
import { createClassComponent } from 'svelte/legacy';
import * as ibexdb from 'ibexdb';
import * as stores from 'ibexdb/svelte';
import { countLive } from '../count-live.js';
import Board from './Board.svelte';
import Legacy from './Legacy.svelte';
import Count from './Count.svelte';
import Runes from './Runes.svelte';
import Probe from './Probe.svelte';

window.t = { Svelte, store, createClassComponent, ibexdb, stores, countLive, components: { Board, Legacy, Count, Runes, Probe } };
document.body.dataset.ready = '1';
