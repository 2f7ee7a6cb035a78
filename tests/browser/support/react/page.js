// The React test page's module: puts React, react-dom and ibexdb(/react) on `window.t` for the
// spec, with a counter of the database's live queries (opened through the API, closed, still
// open in the page's bookkeeping) so a test can prove no subscription leaks.
import * as React from 'react';
import * as ReactDOM from 'react-dom/client';
import * as ibexdb from 'ibexdb';
import * as hooks from 'ibexdb/react';
import { countLive } from '../count-live.js';

window.t = { React, ReactDOM, ibexdb, hooks, countLive, h: React.createElement };
document.body.dataset.ready = '1';
