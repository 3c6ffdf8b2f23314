/**
 * `npm run bench [-- <filter>...] [--json <file>]`: runs every `scripts/bench/*.bench.ts` (or those
 * whose file name contains a filter), one after another in this process, and prints one table.
 * A suite that throws is reported and the others still run; the exit code is 1 if any failed.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import type { Row } from "./types.js"

type Result = { readonly suite: string; readonly rows: ReadonlyArray<Row>; readonly error?: string }

const parseArgs = (argv: ReadonlyArray<string>) => {
  const filters: Array<string> = []
  let json: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === "--json") {
      json = argv[++i]
      if (json === undefined) throw new Error("--json needs a file name")
    } else if (a.startsWith("--json=")) json = a.slice("--json=".length)
    else filters.push(a)
  }
  return { filters, json }
}

const isRow = (r: unknown): r is Row => {
  if (typeof r !== "object" || r === null) return false
  const o = r as Record<string, unknown>
  const b = o.baseline as Record<string, unknown> | undefined
  return typeof o.name === "string" && typeof o.value === "number" && typeof o.unit === "string" &&
    (b === undefined || (typeof b === "object" && b !== null && typeof b.name === "string" && typeof b.value === "number")) &&
    (o.goal === undefined || typeof o.goal === "string")
}

const runSuite = async (file: string): Promise<Result> => {
  const suite = path.basename(file, ".bench.ts")
  try {
    const mod = (await import(pathToFileURL(file).href)) as { default?: unknown }
    if (typeof mod.default !== "function") throw new Error(`${path.basename(file)} has no default export function`)
    const rows: unknown = await (mod.default as () => Promise<unknown>)()
    if (!Array.isArray(rows)) throw new Error("the default export did not resolve to an array of rows")
    const bad = rows.findIndex((r) => !isRow(r))
    if (bad >= 0) throw new Error(`row ${bad} is not { name, value, unit, baseline?, goal? }: ${JSON.stringify(rows[bad])}`)
    return { suite, rows }
  } catch (e) {
    return { suite, rows: [], error: e instanceof Error ? (e.stack ?? e.message) : String(e) }
  }
}

const num = (v: number) => {
  if (!Number.isFinite(v)) return String(v)
  const a = Math.abs(v)
  return a >= 1000 ? Math.round(v).toLocaleString("en-US") : a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2)
}

const ratioOf = (r: Row) => (r.baseline && r.baseline.value !== 0 ? r.value / r.baseline.value : undefined)

const table = (header: ReadonlyArray<string>, body: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

const machine = () => {
  const cpus = os.cpus()
  return {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: `${cpus.length} x ${cpus[0]?.model.trim() ?? "unknown"}`,
    memory: `${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    date: new Date().toISOString()
  }
}

const main = async () => {
  const { filters, json } = parseArgs(process.argv.slice(2))
  const dir = import.meta.dirname
  const files = fs.readdirSync(dir)
    .filter((f) => f.endsWith(".bench.ts") && (filters.length === 0 || filters.some((x) => f.includes(x))))
    .sort()
    .map((f) => path.join(dir, f))
  const facts = machine()
  console.log(Object.entries(facts).map(([k, v]) => `${k}: ${v}`).join("\n") + "\n")
  if (files.length === 0) {
    console.error(`no suite matches ${filters.map((f) => `'${f}'`).join(", ") || "(none found)"} in ${dir}`)
    return 1
  }

  const results: Array<Result> = []
  for (const file of files) {
    const name = path.basename(file)
    process.stderr.write(`running ${name} ...\n`)
    const started = performance.now()
    const result = await runSuite(file)
    process.stderr.write(`${name}: ${result.error ? "FAILED" : `${result.rows.length} row(s)`} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`)
    results.push(result)
  }

  const body = results.flatMap((res) =>
    res.rows.map((r) => {
      const ratio = ratioOf(r)
      return [res.suite, r.name, `${num(r.value)} ${r.unit}`, r.baseline ? `${r.baseline.name}: ${num(r.baseline.value)}` : "", ratio === undefined ? "" : ratio.toFixed(2), r.goal ?? ""]
    })
  )
  console.log("\n" + (body.length > 0 ? table(["suite", "name", "value", "baseline", "ratio", "goal"], body) : "(no rows)"))
  const failed = results.filter((r) => r.error !== undefined)
  for (const f of failed) console.error(`\nsuite ${f.suite} FAILED:\n${f.error}`)

  if (json !== undefined) {
    const out = {
      machine: facts,
      rows: results.flatMap((res) => res.rows.map((r) => ({ suite: res.suite, ...r, ratio: ratioOf(r) ?? null }))),
      failures: failed.map((f) => ({ suite: f.suite, error: f.error }))
    }
    fs.writeFileSync(json, JSON.stringify(out, null, 2) + "\n")
    console.log(`\nwrote ${path.resolve(json)}`)
  }
  return failed.length > 0 ? 1 : 0
}

// Exit explicitly: a suite that leaks a handle must not keep the run open.
main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
