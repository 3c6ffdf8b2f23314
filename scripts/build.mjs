// Two bundles: dist/pynchy.mjs, the CLI (one tree-shaken file starts far faster than loading
// effect's module graph piece by piece; native and heavy optional packages stay external), and
// dist/runner.mjs, the in-sandbox agent runner (self-contained: no node_modules inside the sandbox).
import { build } from "esbuild"

const RUNNER_BANNER = { js: "import { createRequire as __pynchyRequire } from 'node:module'; const require = __pynchyRequire(import.meta.url);" }

const common = { outdir: "dist", outExtension: { ".js": ".mjs" }, bundle: true, platform: "node", target: "node20", format: "esm", logLevel: "warning" }

await Promise.all([
  build({
    ...common,
    entryPoints: { pynchy: "layers/cli.ts" },
    sourcemap: "linked",
    // OpenTelemetry is imported only when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/telemetry/Telemetry.ts).
    external: ["better-sqlite3", "@modelcontextprotocol/sdk", "zod", "@parcel/watcher", "msgpackr-extract", "gpt-tokenizer", "grammy", "@slack/bolt", "@slack/socket-mode", "discord.js", "@effect/opentelemetry", "@effect/opentelemetry/*", "@opentelemetry/*"],
    // ESM output still meets CommonJS dependencies that call require().
    banner: { js: "import { createRequire as __pynchyRequire } from 'node:module'; const require = __pynchyRequire(import.meta.url);" }
  }),
  // The MCP SDK's stdio client reaches CommonJS (cross-spawn) that calls require(): the same banner.
  build({ ...common, entryPoints: { runner: "src/agent/runner.ts" }, minify: true, legalComments: "none", banner: RUNNER_BANNER })
])
