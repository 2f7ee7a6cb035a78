// ibexdb's public module, at the path apps and tests import (`/www/ibexdb.js`). The library
// itself is the folder www/lib/ (the module, its worker, the engine glue code); this file only
// re-exports it.
export * from './lib/ibexdb.js';
