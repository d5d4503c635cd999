// Import rules that keep the code in the shape CONTRIBUTING.md describes; `npm run lint:deps`
// checks apps/, packages/ and test/ against them, and test/lint/dependency-rules.test.ts
// shows each rule failing on a fixture. Paths are matched with (^|/) so the same rules
// apply to the fixture trees under test/lint/fixtures.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import circle, type-only imports included: one side should own what both need.",
      from: {},
      to: { circular: true },
    },
    {
      name: "modules-not-to-api-surfaces",
      severity: "error",
      comment:
        "A domain module imports public-api/ or platform-api/: the surfaces mount the modules, never the other way round. What the routes need of the caller lives in modules/api-keys/key-principal.ts and modules/auth/session-principal.ts.",
      from: { path: "(^|/)apps/control-plane/src/modules/" },
      to: { path: "(^|/)apps/control-plane/src/(public-api|platform-api)/" },
    },
    {
      name: "packages-not-to-apps",
      severity: "error",
      comment: "A package imports an app: packages are shared by the apps and know none of them.",
      from: { path: "(^|/)packages/" },
      to: { path: "(^|/)apps/" },
    },
    {
      name: "apps-not-to-each-other",
      severity: "error",
      comment: "The agent and the control plane share only packages/protocol (and packages/db for the control plane).",
      from: { path: "(^|/)apps/([^/]+)/" },
      to: { path: "(^|/)apps/", pathNot: "(^|/)apps/$2/" },
    },
    {
      name: "cli-stands-alone",
      severity: "error",
      comment:
        "The berth CLI (apps/control-plane/src/cli) talks to the control plane over HTTP only, through @berth/protocol/api-client: it imports nothing else of the control plane, and no database.",
      from: { path: "(^|/)apps/control-plane/src/cli/" },
      to: { path: "(^|/)apps/control-plane/src/|(^|/)packages/db/", pathNot: "(^|/)apps/control-plane/src/cli/" },
    },
    {
      name: "production-not-to-tests",
      severity: "error",
      comment: "Shipped code imports a test file or test helper.",
      from: { path: "(^|/)(apps|packages)/", pathNot: "\\.test\\.ts$|\\.test-helpers\\.ts$" },
      to: { path: "\\.test\\.ts$|\\.test-helpers\\.ts$" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that resolves to nothing (but the dashboard's vendored module, which dashboard.routes.ts serves from node_modules).",
      from: {},
      to: { couldNotResolve: true, pathNot: "^\\./vendor/openapi-fetch\\.js$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist|\\.data)/|(^|/)test/lint/fixtures/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".mjs", ".cjs", ".json"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
