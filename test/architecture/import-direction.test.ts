/**
 * Imports point one way (ARCHITECTURE.md, "Where code lives"). Imports are read with the
 * TypeScript compiler's own scanner (static imports, `export … from`, `import()`, `require`,
 * type-only imports alike), and the runner's closure is the one esbuild bundles, so a re-export
 * or a dynamic import cannot slip past.
 */
import { assert, describe, it } from "@effect/vitest"
import { build } from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

const ROOT = path.resolve(import.meta.dirname, "../..")

interface Edge {
  /** Repo-relative path of the importing file. */
  readonly file: string
  /** The specifier as written. */
  readonly specifier: string
  /** Repo-relative target for a relative specifier; undefined for a package or `node:` module. */
  readonly target: string | undefined
}

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name)
    if (e.isDirectory()) return sourceFiles(rel)
    return /\.(m?ts|m?js)$/.test(e.name) ? [rel] : []
  })

/** `./x.js` names `./x.ts` in this project (NodeNext); the file itself when it exists. */
const resolveRelative = (from: string, specifier: string): string => {
  const joined = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier))
  if (fs.existsSync(path.join(ROOT, joined))) return joined
  return joined.replace(/\.js$/, ".ts").replace(/\.mjs$/, ".mts")
}

const importsOf = (file: string): ReadonlyArray<Edge> =>
  ts.preProcessFile(fs.readFileSync(path.join(ROOT, file), "utf8"), true, true).importedFiles.map(({ fileName }) => ({
    file,
    specifier: fileName,
    target: fileName.startsWith(".") ? resolveRelative(file, fileName) : undefined
  }))

const SRC = sourceFiles("src")
const EDGES = SRC.flatMap(importsOf)

const under = (dir: string) => (p: string | undefined) => p !== undefined && (p === dir || p.startsWith(`${dir}/`))
const show = (edges: ReadonlyArray<Edge>) => edges.map((e) => `${e.file} imports '${e.specifier}'`).join("\n")

/** Pure packages: schemas, data types and descriptions of effects; nothing that does I/O. */
const PURE_PACKAGE = /^effect(\/[A-Za-z]+)?$/

/**
 * The folders of src/ from the bottom rank up (ARCHITECTURE.md, "Folders have ranks"): an import
 * goes down only. Folders not yet written have their place already (the third wave's access,
 * journal, senses, recall, web, integrations), so a new folder is placed by editing this list.
 */
const RANKS: ReadonlyArray<string> = [
  "protocol", // the IPC protocol and the MCP stdio client: both sides of the sandbox import it
  "agent", // the runner and its cores: only what dist/runner.mjs bundles
  "domain",
  "version.ts",
  "system",
  "config",
  "db",
  "contracts", // hook contracts: plugins, channels, connection runtimes (both shapes), public URL
  "plugins",
  "events", // the bus and the host events; `trace` reads them
  "observers", // what reads the bus: the event log, plugin observers
  "telemetry",
  "untrusted", // the one way to open what the agent or a sender can write
  "files",
  "access",
  "journal",
  "gateway",
  "senses",
  "pipeline",
  "schedules",
  "recall",
  "web",
  "mcp",
  "actions",
  "integrations",
  "sandbox",
  "speech",
  "tunnels",
  "runtimes",
  "cluster",
  "channels",
  "builtins",
  "ui",
  "host",
  "cli"
]

/** `src/<folder>` (or a file directly under src/) of a repo-relative path. */
const folderOf = (file: string) => file.split("/")[1]!

/** Folder -> folders it imports, each with one edge that shows it. */
const FOLDER_GRAPH = (() => {
  const graph = new Map<string, Map<string, Edge>>()
  for (const e of EDGES) {
    if (e.target === undefined || !under("src")(e.target)) continue
    const from = folderOf(e.file)
    const to = folderOf(e.target)
    if (from === to) continue
    const out = graph.get(from) ?? new Map<string, Edge>()
    if (!out.has(to)) out.set(to, e)
    graph.set(from, out)
  }
  return graph
})()

/** The strongly connected components of more than one folder (Tarjan): each is a knot of imports. */
const knots = (graph: ReadonlyMap<string, ReadonlyMap<string, Edge>>): ReadonlyArray<ReadonlyArray<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return found
}

describe("import direction", () => {
  it("reads the imports it judges (the scanner sees re-exports and dynamic imports)", () => {
    const probe = ts.preProcessFile(`export * from "./a.js"\nexport { b } from "./b.js"\nconst c = await import("./c.js")\nimport type { D } from "./d.js"`, true, true)
    assert.deepStrictEqual(probe.importedFiles.map((f) => f.fileName).sort(), ["./a.js", "./b.js", "./c.js", "./d.js"])
    assert.isAbove(SRC.length, 100)
    assert.isTrue(EDGES.some((e) => e.file === "src/host/Host.ts" && e.target === "src/host/startup-steps.ts"))
  })

  it("finds a knot where there is one (the cycle check is not vacuous)", () => {
    const edge: Edge = { file: "x", specifier: "y", target: undefined }
    const graph = new Map([["a", new Map([["b", edge]])], ["b", new Map([["c", edge]])], ["c", new Map([["a", edge]])], ["d", new Map([["a", edge]])]])
    assert.deepStrictEqual(knots(graph), [["a", "b", "c"]])
  })

  it("the folders of src/ form no cycle, however long", () => {
    const shown = knots(FOLDER_GRAPH).map((knot) => {
      const inside = new Set(knot)
      const edges = knot.flatMap((from) => [...(FOLDER_GRAPH.get(from) ?? new Map<string, Edge>()).entries()].filter(([to]) => inside.has(to)).map(([, e]) => e))
      return `knot of ${knot.join(", ")}:\n${show(edges)}`
    })
    assert.strictEqual(shown.join("\n\n"), "")
  })

  it("every folder of src/ has a rank", () => {
    const folders = fs.readdirSync(path.join(ROOT, "src")).filter((f) => !f.startsWith("."))
    assert.deepStrictEqual(folders.filter((f) => !RANKS.includes(f)), [])
  })

  it("every import goes down the ranks", () => {
    const rank = (folder: string) => RANKS.indexOf(folder)
    const up = [...FOLDER_GRAPH.entries()].flatMap(([from, out]) => [...out.entries()].filter(([to]) => rank(to) >= rank(from)).map(([, e]) => e))
    assert.strictEqual(show(up), "")
  })

  it("nothing in src/ imports layers/ (compositions sit on top)", () => {
    assert.strictEqual(show(EDGES.filter((e) => under("layers")(e.target))), "")
  })

  it("the domain imports no effectful module: only effect's pure modules, itself and the protocol", () => {
    const bad = EDGES.filter((e) =>
      under("src/domain")(e.file) &&
      (e.target === undefined ? !PURE_PACKAGE.test(e.specifier) : !(under("src/domain")(e.target) || under("src/protocol")(e.target)))
    )
    assert.strictEqual(show(bad), "")
  })

  it("the protocol is a leaf: it imports effect, node's modules, the MCP SDK and itself only", () => {
    const bad = EDGES.filter((e) =>
      under("src/protocol")(e.file) &&
      (e.target === undefined ? !(PURE_PACKAGE.test(e.specifier) || e.specifier.startsWith("node:") || e.specifier.startsWith("@modelcontextprotocol/sdk/")) : !under("src/protocol")(e.target))
    )
    assert.strictEqual(show(bad), "")
  })

  describe("the runner (src/agent/runner.ts and what it bundles)", () => {
    const bundled = build({
      entryPoints: [path.join(ROOT, "src/agent/runner.ts")],
      absWorkingDir: ROOT,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      write: false,
      metafile: true,
      logLevel: "silent"
    }).then((r) => Object.keys(r.metafile.inputs).filter((p) => !p.includes("node_modules/")))

    it("imports nothing of the host but the protocol", async () => {
      const inputs = await bundled
      assert.include(inputs, "src/agent/runner.ts")
      assert.include(inputs, "src/protocol/ipc.ts")
      assert.deepStrictEqual(inputs.filter((p) => !under("src/agent")(p) && !under("src/protocol")(p)), [])
    })

    it("is all src/agent holds: every file there is bundled into the runner", async () => {
      const inputs = new Set(await bundled)
      assert.deepStrictEqual(sourceFiles("src/agent").filter((f) => !inputs.has(f)), [])
    })
  })
})
