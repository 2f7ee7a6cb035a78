// react-dom/client (and flushSync) as an ES module for the React test page's import map (vendor.ts).
import { createRoot, hydrateRoot } from 'react-dom/client';
import { flushSync } from 'react-dom';
export { createRoot, hydrateRoot, flushSync };
