/**
 * Plugin discovery + validation for 50 installed third-party plugins (node_modules scan, import,
 * every hook called, every contribution decoded), against the floor of importing the same 50
 * modules and nothing else. Each round writes fresh copies so no import is served from cache;
 * one warm-up round, then the median of ROUNDS.
 */
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { HostConfig } from "../../src/config/HostConfig.js"
import { PynchyConfig } from "../../src/config/schema.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { buildRegistry, type Candidate } from "../../src/plugins/registry.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

const PLUGINS = 50
const ROUNDS = 7

const pluginSource = (i: number) => `import * as path from "node:path"
import { fileURLToPath } from "node:url"
const here = path.dirname(fileURLToPath(import.meta.url))
export default {
  name: "bench-${i}",
  version: "1.0.0",
  skillPaths: () => [path.join(here, "skill")],
  serviceHandler: async () => ({
    name: "bench${i}.act", description: "a bench action", risk: "low",
    inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    handler: async (input) => input
  }),
  createChannel: () => ({ name: "bench-${i}", idempotentResends: true, send: async () => {} }),
  agentCore: () => ({ name: "bench-${i}", module: path.join(here, "core.mjs") }),
  actionSpecs: () => [{ id: "bench${i}.act", surfaces: ["chat"], evidence: [] }]
}
`

/** A project with 50 plugin packages in node_modules; returns its root and the module files. */
const writeProject = () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-plugins-"))
  fs.writeFileSync(path.join(root, "package.json"), JSON.stringify({ name: "bench", private: true }))
  const files: Array<string> = []
  for (let i = 0; i < PLUGINS; i++) {
    const dir = path.join(root, "node_modules", `pynchy-plugin-bench-${i}`)
    fs.mkdirSync(path.join(dir, "skill"), { recursive: true })
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: `pynchy-plugin-bench-${i}`, version: "1.0.0", type: "module", pynchy: { plugin: "./plugin.js" } }))
    fs.writeFileSync(path.join(dir, "plugin.js"), pluginSource(i))
    fs.writeFileSync(path.join(dir, "core.mjs"), "export default async (ctx) => ctx.reply('bench')\n", { mode: 0o644 })
    fs.writeFileSync(path.join(dir, "skill", "SKILL.md"), `---\nname: bench-${i}\ndescription: a bench skill\ntier: community\n---\n# bench\n`)
    files.push(path.join(dir, "plugin.js"))
  }
  return { root, files }
}


const host = HostConfig.layerFrom(PynchyConfig.make({})) as Layer.Layer<HostConfig>

const discoverAndValidate = (root: string) =>
  Effect.runPromise(
    PluginRegistry.inspect({ root, builtins: [] }).pipe(
      Effect.provide(host),
      Effect.tap(({ faults, registry }) =>
        faults.length > 0 || registry.plugins.length !== PLUGINS ? Effect.die(new Error(`bench plugin set invalid: ${faults.length} fault(s)`)) : Effect.void
      )
    )
  )

/** The timed rounds (run in a plain node child, see below); medians in ms. */
export async function measure() {
  const importMs: Array<number> = []
  const totalMs: Array<number> = []
  const validateMs: Array<number> = []
  for (let round = 0; round <= ROUNDS; round++) {
    const a = writeProject()
    const b = writeProject()
    let t = performance.now()
    const modules = await Promise.all(a.files.map((f) => import(pathToFileURL(f).href) as Promise<{ default: unknown }>))
    const imported = performance.now() - t

    t = performance.now()
    await discoverAndValidate(b.root)
    const total = performance.now() - t

    const candidates: Array<Candidate> = modules.map((m) => ({ plugin: m.default, source: { _tag: "builtin" } }))
    t = performance.now()
    await Effect.runPromise(buildRegistry(candidates))
    const validated = performance.now() - t

    fs.rmSync(a.root, { recursive: true, force: true })
    fs.rmSync(b.root, { recursive: true, force: true })
    if (round === 0) continue // warm-up: first use of the code paths
    importMs.push(imported)
    totalMs.push(total)
    validateMs.push(validated)
  }
  return { imported: median(importMs), total: median(totalMs), validated: median(validateMs) }
}

/**
 * The bench runner runs under tsx, whose loader hooks sit on every `import()` and would dominate
 * the figure; the host runs as a plain-node bundle. So the rounds run the way the host does:
 * this file bundled with esbuild (as scripts/build.mjs bundles the CLI), in a plain node child.
 */
export default async function bench(): Promise<Array<Row>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-plugins-bundle-"))
  try {
    const outfile = path.join(dir, "measure.mjs")
    // Imported here, not at the top: the bundle below contains this file and must not load esbuild.
    const { build } = await import("esbuild")
    await build({
      stdin: { contents: `import { measure } from "./plugins.bench.ts"\nconsole.log(JSON.stringify(await measure()))\n`, resolveDir: import.meta.dirname, loader: "ts" },
      outfile,
      bundle: true,
      platform: "node",
      target: "node20",
      format: "esm",
      logLevel: "warning",
      external: ["esbuild"],
      banner: { js: "import { createRequire as __pynchyRequire } from 'node:module'; const require = __pynchyRequire(import.meta.url);" }
    })
    const out = execFileSync(process.execPath, [outfile], { encoding: "utf8", timeout: 120_000 })
    const figures = JSON.parse(out.trim().split("\n").pop()!) as { imported: number; total: number; validated: number }
    const baseline = { name: `import() of the same ${PLUGINS} modules`, value: round2(figures.imported) }
    return [
      { name: `plugins: discovery + validation, ${PLUGINS} installed plugins (node_modules scan, import, hooks, decode)`, value: round2(figures.total), unit: "ms", baseline, goal: "≤ 50 ms" },
      { name: `plugins: validation only, ${PLUGINS} loaded plugins (${PLUGINS * 5} contributions)`, value: round2(figures.validated), unit: "ms" }
    ]
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

function round2(x: number) {
  return Math.round(x * 100) / 100
}
