#!/usr/bin/env node
// The shipped entry point: the bundle built by `npm run build` (run by `npm ci` through `prepare`).
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const bundle = new URL("../dist/pynchy.mjs", import.meta.url)
if (!existsSync(fileURLToPath(bundle))) {
  console.error("pynchy: dist/pynchy.mjs is missing; run `npm run build` in the package folder.")
  process.exit(1)
}
await import(bundle.href)
