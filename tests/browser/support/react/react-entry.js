// React from npm (CommonJS only) as an ES module for the React test page's import map: built by
// vendor.ts (Vite, development mode: StrictMode's double mounts happen only there).
import React from 'react';
export default React;
export const { Children, Component, Fragment, StrictMode, Suspense, createContext, createElement, memo, use, useCallback, useContext, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState, useSyncExternalStore } = React;
