// Bundles the CLI into dist/pynchy.mjs: one tree-shaken file starts far faster than loading
// effect's module graph piece by piece. Native and heavy optional packages stay external.
import { build } from "esbuild"

await build({
  entryPoints: { pynchy: "layers/cli.ts" },
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  sourcemap: "linked",
  logLevel: "warning",
  external: ["better-sqlite3", "@modelcontextprotocol/sdk", "zod", "@parcel/watcher", "msgpackr-extract"],
  // ESM output still meets CommonJS dependencies that call require().
  banner: { js: "import { createRequire as __pynchyRequire } from 'node:module'; const require = __pynchyRequire(import.meta.url);" }
})

// The in-sandbox agent runner is its own bundle.
await import("./build-runner.mjs")
