// The Svelte 4 bundle of the test page (build.ts): Legacy.svelte compiled by Svelte 4's
// compiler, with Svelte 4's runtime and svelte/store, on `window.t4`. (Each runtime adds its
// major version to `window.__svelte.v`: the spec reads both there.)
import { writable } from 'svelte/store';
import Legacy from './Legacy.svelte';

window.t4 = { writable, Legacy };
document.body.dataset.ready4 = '1';
