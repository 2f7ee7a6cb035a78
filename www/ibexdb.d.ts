// Types of www/ibexdb.js: those of the library's public module, www/lib/ibexdb.d.ts.
export * from './lib/ibexdb.js';
