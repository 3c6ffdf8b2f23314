/**
 * What the host-side walls cost a turn: the audit after each turn (walk without following links,
 * strip setuid/setgid bits, sum sizes) over workspaces of growing size, against a plain
 * recursive `readdir` + `lstat` of the same tree (the least any size check must do); and an
 * untrusted SKILL.md read against a plain `readFile`.
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { auditFolder, readUntrusted } from "../../src/untrusted/untrusted.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

const RUNS = 7

const tree = (files: number): string => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-walls-"))
  for (let i = 0; i < files; i++) {
    const dir = path.join(root, `d${i % 50}`, `e${i % 7}`)
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, `f${i}.txt`), "x".repeat(100))
  }
  return root
}

const plainWalk = async (root: string) => {
  let bytes = 0
  for (const e of await fsp.readdir(root, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) bytes += (await fsp.lstat(path.join(e.parentPath, e.name))).size
  }
  return bytes
}

const timed = async (f: () => Promise<unknown>) => {
  const xs: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now()
    await f()
    xs.push(performance.now() - t0)
  }
  return median(xs)
}

export default async (): Promise<Array<Row>> => {
  const rows: Array<Row> = []
  for (const files of [1_000, 10_000]) {
    const root = tree(files)
    const baseline = await timed(() => plainWalk(root))
    const audit = await timed(() => auditFolder(root))
    rows.push({ name: `audit after a turn, ${files.toLocaleString("en-US")} files, p50`, value: audit, unit: "ms", baseline: { name: "readdir + lstat", value: baseline } })
    fs.rmSync(root, { recursive: true, force: true })
  }
  const root = tree(1)
  const skill = path.join(root, "SKILL.md")
  fs.writeFileSync(skill, "---\nname: s\n---\n" + "y".repeat(4_000))
  const reads = 500
  const plain = await timed(async () => { for (let i = 0; i < reads; i++) await fsp.readFile(skill, "utf8") })
  const untrusted = await timed(async () => { for (let i = 0; i < reads; i++) await readUntrusted(root, skill, 64 * 1024) })
  rows.push({ name: "untrusted SKILL.md read, per file", value: (untrusted / reads) * 1000, unit: "µs", baseline: { name: "fs.readFile", value: (plain / reads) * 1000 } })
  fs.rmSync(root, { recursive: true, force: true })
  return rows
}
