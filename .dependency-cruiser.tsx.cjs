// The same rules (.dependency-cruiser.cjs) for the dashboard's .tsx files, which dependency-cruiser 17
// does not give to swc: read by its own parser (acorn, loose on TypeScript syntax), which finds every
// import line of those files (test/layers.test.ts checks one that imports src/). docs/decisions.md.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  extends: './.dependency-cruiser.cjs',
  options: {
    parser: 'acorn',
    exclude: { path: '(^|/)node_modules/' },
  },
};
