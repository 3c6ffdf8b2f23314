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

/** Folder pairs that must not meet, each with the reason (the layering this test keeps). */
const FORBIDDEN: ReadonlyArray<{ readonly from: string; readonly to: string; readonly why: string }> = [
  { from: "src/pipeline", to: "src/host", why: "the pipeline (owner epoch included) sits below the startup sequence" },
  { from: "src/runtimes", to: "src/host/startup-steps.ts", why: "the startup steps order the runtimes, not the reverse" },
  { from: "src/config", to: "src/gateway", why: "the config schema holds every section, the gateway's too" },
  { from: "src/gateway", to: "src/sandbox", why: "the sandbox reaches the gateway; the gateway knows nothing of sandboxes" }
]

describe("import direction", () => {
  it("reads the imports it judges (the scanner sees re-exports and dynamic imports)", () => {
    const probe = ts.preProcessFile(`export * from "./a.js"\nexport { b } from "./b.js"\nconst c = await import("./c.js")\nimport type { D } from "./d.js"`, true, true)
    assert.deepStrictEqual(probe.importedFiles.map((f) => f.fileName).sort(), ["./a.js", "./b.js", "./c.js", "./d.js"])
    assert.isAbove(SRC.length, 100)
    assert.isTrue(EDGES.some((e) => e.file === "src/host/Host.ts" && e.target === "src/host/startup-steps.ts"))
  })

  it("no two folders of src/ import each other: the folders form a one-way order", () => {
    const folderOf = (file: string) => file.split("/").slice(0, 2).join("/")
    const pairs = new Map<string, Edge>()
    for (const e of EDGES) {
      if (e.target === undefined || !under("src")(e.target)) continue
      const from = folderOf(e.file)
      const to = folderOf(e.target)
      if (from !== to && !pairs.has(`${from} -> ${to}`)) pairs.set(`${from} -> ${to}`, e)
    }
    const both = [...pairs.entries()].filter(([k]) => {
      const [from, to] = k.split(" -> ")
      return from! < to! && pairs.has(`${to} -> ${from}`)
    })
    assert.strictEqual(both.map(([k, e]) => {
      const [from, to] = k.split(" -> ")
      return `${from} <-> ${to}: ${show([e])} and ${show([pairs.get(`${to} -> ${from}`)!])}`
    }).join("\n"), "")
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

  it("the protocol is a leaf: it imports effect and itself only", () => {
    const bad = EDGES.filter((e) =>
      under("src/protocol")(e.file) && (e.target === undefined ? !PURE_PACKAGE.test(e.specifier) : !under("src/protocol")(e.target))
    )
    assert.strictEqual(show(bad), "")
  })

  for (const rule of FORBIDDEN) {
    it(`${rule.from} does not import ${rule.to}: ${rule.why}`, () => {
      assert.strictEqual(show(EDGES.filter((e) => under(rule.from)(e.file) && under(rule.to)(e.target))), "")
    })
  }

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
