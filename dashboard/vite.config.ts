import { defineConfig } from 'vite';

/**
 * The dashboard is served by the Tollgate server at /dashboard (same origin as /admin/v1).
 * Preact's JSX through Vite's own transform: no framework plugin (and its Babel) needed.
 * No inline script or style may appear in the output: the page runs under
 * `script-src 'self'; style-src 'self'`.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  // `npx vite --config dashboard/vite.config.ts` for work on the pages: the admin API of a running server
  // (TOLLGATE_URL, default http://127.0.0.1:8080) appears on the same origin, so the session cookie works.
  server: { proxy: { '/admin': process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8080' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The preload polyfill is for browsers without modulepreload; every supported one has it.
    modulePreload: { polyfill: false },
    // Never inline assets as data: URIs into the CSS or the scripts.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
