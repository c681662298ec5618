// The layering rules CI checks (`npm test` runs `npm run check:layers`); docs/architecture.md explains them.
// Layers, top to bottom: routes -> middleware -> core (src/) -> src/contracts/. The store is core's floor: it
// knows no HTTP framework, no OpenTelemetry and none of the parts that use it.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'A file-level import cycle: two files that need each other are one concept split in two, or a layer crossed backwards.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-not-above',
      severity: 'error',
      comment: 'src/ is below routes/ and middleware/; only the composition root (src/app.ts) mounts them.',
      from: { path: '^src/', pathNot: '^src/app\\.ts$' },
      to: { path: '^(routes|middleware)/' },
    },
    {
      name: 'middleware-not-routes',
      severity: 'error',
      comment: 'middleware/ is below routes/: a route uses middleware, never the other way round.',
      from: { path: '^middleware/' },
      to: { path: '^routes/' },
    },
    {
      name: 'config-is-a-leaf',
      severity: 'error',
      comment: 'config/ (the zod schema) is read by every layer, so it imports none of them.',
      from: { path: '^config/' },
      to: { path: '^(src|routes|middleware)/' },
    },
    {
      name: 'contracts-is-a-leaf',
      severity: 'error',
      comment: 'src/contracts/ (span attribute names, the canonical call record) is below both the store and tracing.',
      from: { path: '^src/contracts/' },
      to: { path: '^(src/(?!contracts/)|routes/|middleware/|config/)' },
    },
    {
      name: 'store-at-the-bottom',
      severity: 'error',
      comment: 'The store knows no tracing, gateway, attribution, routes or middleware: they use it.',
      from: { path: '^src/store/' },
      to: { path: '^(src/(tracing|gateway|attribution)/|routes/|middleware/)' },
    },
    {
      name: 'store-no-http-no-otel',
      severity: 'error',
      comment: 'The store stays free of the HTTP framework, the HTTP client library and OpenTelemetry.',
      from: { path: '^src/store/' },
      to: {
        dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'],
        path: '(^|/)node_modules/(hono|@hono/|undici|@opentelemetry/)',
      },
    },
    {
      name: 'tracing-not-gateway',
      severity: 'error',
      comment: 'The gateway writes spans through tracing; tracing reading the gateway back would be a folder cycle.',
      from: { path: '^src/tracing/' },
      to: { path: '^src/gateway/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are dependencies too: a type from a higher layer couples the layers all the same.
    tsPreCompilationDeps: true,
    // swc, not the typescript compiler: the project's TypeScript 7 has no JavaScript API for dependency-cruiser.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|dashboard/dist)/' },
    cache: false,
  },
};
