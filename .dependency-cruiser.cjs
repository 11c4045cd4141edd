// The layer rules of docs/layers.md, checked by `npm run check:layers` (part of `npm test`).
// Layers, top to bottom: src/wiring.ts and src/cli → src/http → src/domain → src/store → src/net;
// src/config is a leaf beside them. sdk/ and dashboard/ reach the server over HTTP only.
//
// Parsing: TypeScript 7 has no JavaScript compiler API, so dependency-cruiser reads .ts through
// @swc/core (`parser: 'swc'`), which keeps `import type` lines: a type-only import breaks a rule
// like any other. swc is not given .tsx by dependency-cruiser 17, so the dashboard's .tsx files
// are cruised by .dependency-cruiser.tsx.cjs (docs/decisions.md).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'http-not-to-store',
      comment:
        'src/http talks to the domain only: store errors, cursors and database kinds reach it through src/domain.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/store/' },
    },
    {
      name: 'config-is-a-leaf',
      comment: 'src/config reads the environment and imports nothing of the project but src/net (the bottom layer).',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: '^src/', pathNot: ['^src/config/', '^src/net/'] },
    },
    {
      name: 'store-not-upwards',
      comment: 'src/store imports nothing above it: no domain, http, cli, config or wiring.',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: ['^src/store/', '^src/net/'] },
    },
    {
      name: 'domain-not-upwards',
      comment: 'src/domain knows nothing of HTTP, the CLI or the wiring.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/(http|cli)/|^src/wiring\\.ts$' },
    },
    {
      name: 'http-not-to-cli',
      comment: 'the server does not depend on the command line, nor on the wiring that builds it.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/cli/|^src/wiring\\.ts$' },
    },
    {
      name: 'net-is-the-bottom',
      comment: 'src/net (address and proxy-list parsing) is the bottom layer: it imports nothing of the project.',
      severity: 'error',
      from: { path: '^src/net/' },
      to: { path: '^src/', pathNot: '^src/net/' },
    },
    {
      name: 'clients-over-http-only',
      comment: 'sdk/ and dashboard/ reach the server over HTTP: they import nothing of src/.',
      severity: 'error',
      from: { path: '^(sdk|dashboard)/' },
      to: { path: '^src/' },
    },
    {
      name: 'no-cycles-in-src',
      comment: 'no file-level import cycles in src/ (type-only imports count too).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/|^sdk/typescript/dist/|\\.tsx$' },
  },
};
