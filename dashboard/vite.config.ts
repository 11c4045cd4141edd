import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

/** Types worth compressing; images and fonts are compressed already. */
const COMPRESSIBLE = /\.(?:html|js|mjs|css|svg|json|txt|webmanifest)$/;

/**
 * Writes NAME.br and NAME.gz beside each text file of the build, at the highest levels, once:
 * the server (src/http/dashboard.ts) sends whichever the browser accepts instead of compressing
 * on every request. A compressed copy that is not smaller is not written.
 */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'tollgate-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = join(config.root, config.build.outDir);
    },
    closeBundle() {
      const walk = (dir: string): string[] =>
        readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
      for (const file of walk(outDir).filter((f) => COMPRESSIBLE.test(f))) {
        const raw = readFileSync(file);
        const br = brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } });
        const gz = gzipSync(raw, { level: 9 });
        if (br.length < raw.length) writeFileSync(file + '.br', br);
        if (gz.length < raw.length) writeFileSync(file + '.gz', gz);
      }
    },
  };
}

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
  plugins: [precompress()],
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
