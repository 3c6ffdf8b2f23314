// Two builds: dist/pynchy.cjs, the CLI, and dist/runner.mjs, the in-sandbox agent runner
// (self-contained: no node_modules inside the sandbox).
//
// The CLI is one tree-shaken bundle (it starts far faster than effect's module graph loaded
// piece by piece; native and heavy optional packages stay external). It is a script, not an ES
// module, because node 20 keeps a code cache only for scripts: bin/pynchy.js runs it with one.
// What a dynamic import() reaches (a channel's runtime, the cluster runner, Postgres, the Control
// UI, the doctor's checks) is compiled lazily and runs only when used.
import { build } from "esbuild"
import { spawn, spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const ESM_REQUIRE_BANNER = "import { createRequire as __pynchyRequire } from 'node:module'; const require = __pynchyRequire(import.meta.url);"
/** The bundle's first line: its hash, filled in below, which keys its code cache (bin/pynchy.js). */
const HASH_PLACEHOLDER = "0".repeat(64)

const common = { outdir: "dist", bundle: true, platform: "node", target: "node20", logLevel: "warning" }

/**
 * V8 decodes a source file with any non-ASCII byte into a two-byte string: twice the memory, and
 * slower to read and to parse. esbuild escapes strings but keeps comments and template text as
 * written, so the build fails here when one comes back.
 */
const assertAscii = (file) => {
  const text = readFileSync(file, "latin1")
  const at = text.search(/[^\x00-\x7f]/)
  if (at >= 0) {
    const line = text.slice(0, at).split("\n").length
    throw new Error(`${file}:${line}: a non-ASCII character (escape it in source, or strip the comment that carries it)`)
  }
}

/**
 * node 20 loses the import() callback of a script compiled from a code cache, so the bundle's one
 * import() is src/system/import-module.ts's fallback, which the bundle never reaches (the entry
 * point lends it its own). Any other, from our code or a bundled package, fails the build here.
 */
const assertOneImport = (file) => {
  const text = readFileSync(file, "utf8")
  const found = [...text.matchAll(/\bimport\(/g)].map((m) => text.slice(m.index, m.index + 40))
  if (found.length !== 1 || !found[0].startsWith("import(specifier)")) {
    throw new Error(`${file}: import() other than src/system/import-module.ts's; use importModule there instead:\n  ${found.join("\n  ")}`)
  }
}

const cli = async () => {
  const result = await build({
    ...common,
    entryPoints: { pynchy: "layers/cli.ts" },
    format: "cjs",
    outExtension: { ".js": ".cjs" },
    sourcemap: "linked",
    // Comments are all that minifying whitespace removes here that matters (see assertAscii);
    // names stay, so stack traces read as source even without the map.
    minifyWhitespace: true,
    legalComments: "none",
    metafile: true,
    // Outside: the native driver, and the optional SDKs a host may not have or use (imported
    // through src/system/import-module.ts; OpenTelemetry only when OTEL_EXPORTER_OTLP_ENDPOINT is set).
    external: ["better-sqlite3", "@parcel/watcher", "msgpackr-extract", "gpt-tokenizer", "grammy", "@slack/bolt", "@slack/socket-mode", "discord.js", "@effect/opentelemetry", "@effect/opentelemetry/*", "@opentelemetry/*"],
    // The sources are ES modules; the few that locate files from import.meta.url get the bundle's.
    define: { "import.meta.url": "__pynchyImportMetaUrl" },
    banner: { js: `/* pynchy-bundle ${HASH_PLACEHOLDER} */\nvar __pynchyImportMetaUrl = require("node:url").pathToFileURL(__filename).href;` }
  })
  const file = "dist/pynchy.cjs"
  assertAscii(file)
  assertOneImport(file)
  const text = readFileSync(file, "utf8")
  writeFileSync(file, text.replace(HASH_PLACEHOLDER, createHash("sha256").update(text).digest("hex")))
  // What the bundle holds, by input (esbuild's metafile), for whoever looks for what to trim.
  if (process.env.PYNCHY_BUILD_META) writeFileSync(process.env.PYNCHY_BUILD_META, JSON.stringify(result.metafile))
  // Caches of an earlier bundle are never used again; a first run leaves one for the next.
  rmSync("dist/v8-cache", { recursive: true, force: true })
  mkdirSync("dist/v8-cache")
  await warmCodeCache()
}

/**
 * Leaves the code cache of the flags the `pynchy` command runs with (bin/pynchy.js's first line):
 * a host started in a scratch folder and stopped once ready, so the cache holds what a start
 * compiles (measured: 40-90 ms off start to ready against a cache of --help alone). If that host
 * does not come up, --help makes the cache instead; if even that fails, the bundle is broken.
 */
const warmCodeCache = async () => {
  const command = ["--max-semi-space-size=2", path.resolve("bin/pynchy.js")]
  const dir = mkdtempSync(path.join(os.tmpdir(), "pynchy-build-"))
  try {
    const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("PYNCHY_"))), HOME: dir }
    const started = await new Promise((resolve) => {
      const host = spawn(process.execPath, [...command, "start", "--headless"], { cwd: dir, env, stdio: ["ignore", "ignore", "pipe"] })
      let log = ""
      const limit = setTimeout(() => host.kill("SIGKILL"), 30_000)
      host.stderr.setEncoding("utf8").on("data", (chunk) => {
        const before = log
        log += chunk
        if (!before.includes(" ready") && log.includes(" ready")) host.kill("SIGTERM")
      })
      host.on("exit", (code) => {
        clearTimeout(limit)
        resolve(log.includes(" ready") && code !== null)
      })
    })
    if (started) return
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const help = spawnSync(process.execPath, [...command, "--help"], { stdio: "ignore" })
  if (help.status !== 0) throw new Error(`bin/pynchy.js --help failed on the new bundle (exit ${help.status})`)
}

await Promise.all([
  cli(),
  // The MCP SDK's stdio client reaches CommonJS (cross-spawn) that calls require(): the banner.
  build({ ...common, entryPoints: { runner: "src/agent/runner.ts" }, format: "esm", outExtension: { ".js": ".mjs" }, minify: true, legalComments: "none", banner: { js: ESM_REQUIRE_BANNER } })
])
