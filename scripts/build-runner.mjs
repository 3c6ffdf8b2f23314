// Bundles the in-sandbox agent runner into dist/runner.mjs: one self-contained file (no
// node_modules inside the sandbox), mounted read-only at /opt/pynchy/runner.mjs.
import { build } from "esbuild"

await build({
  entryPoints: { runner: "src/agent/runner.ts" },
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  minify: true,
  legalComments: "none",
  logLevel: "warning"
})
