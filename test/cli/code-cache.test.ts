/**
 * bin/pynchy.js runs the built bundle with V8's code cache (dist/v8-cache/). Each test runs a copy
 * of the package (the entry point and the built bundle, the repository's node_modules linked) so
 * it can remove, corrupt or block the cache without touching the one the suite runs with.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { BIN, cleanEnv } from "../support/cli.js"
import { tempDir } from "../support/temp.js"

const ROOT = path.resolve(import.meta.dirname, "../..")

/** A package folder with bin/ (pynchy.js, package.json) and dist/pynchy.cjs, and no code cache yet. */
const packageCopy = () => {
  const dir = tempDir()
  fs.mkdirSync(path.join(dir, "bin"))
  fs.mkdirSync(path.join(dir, "dist"))
  fs.copyFileSync(BIN, path.join(dir, "bin/pynchy.js"))
  fs.copyFileSync(path.join(ROOT, "bin/package.json"), path.join(dir, "bin/package.json"))
  fs.copyFileSync(path.join(ROOT, "dist/pynchy.cjs"), path.join(dir, "dist/pynchy.cjs"))
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"))
  return dir
}

const run = (dir: string, nodeFlags: ReadonlyArray<string> = []) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, path.join(dir, "bin/pynchy.js"), "--version"], { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s))
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

const cacheFiles = (dir: string) => fs.readdirSync(path.join(dir, "dist/v8-cache")).sort()

const VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version as string

describe("the code cache of the built CLI (real processes)", () => {
  it("a first run leaves one cache per flag set, named for the bundle's hash; a later run uses it and writes nothing", { timeout: 60_000 }, async () => {
    const dir = packageCopy()
    const hash = /^\/\* pynchy-bundle ([0-9a-f]{64}) \*\//.exec(fs.readFileSync(path.join(dir, "dist/pynchy.cjs"), "latin1"))?.[1]
    assert.isDefined(hash, "the build writes the bundle's hash on its first line")

    const first = await run(dir)
    assert.strictEqual(first.code, 0, first.stderr)
    assert.strictEqual(first.stdout.trim(), VERSION)
    assert.strictEqual(first.stderr, "", "no warning about how the bundle is loaded")
    const [made] = cacheFiles(dir)
    assert.match(made ?? "", new RegExp(`^${hash!.slice(0, 24)}-[0-9a-f]{8}\\.bin$`))
    const written = fs.statSync(path.join(dir, "dist/v8-cache", made!))
    assert.isAbove(written.size, 100_000, "the cache holds compiled code")

    const second = await run(dir)
    assert.strictEqual(second.stdout.trim(), VERSION)
    assert.deepStrictEqual(cacheFiles(dir), [made], "a usable cache is not written again")
    assert.strictEqual(fs.statSync(path.join(dir, "dist/v8-cache", made!)).mtimeMs, written.mtimeMs)

    // V8 refuses a cache made under other flags: another flag set gets its own file.
    const other = await run(dir, ["--max-old-space-size=512"])
    assert.strictEqual(other.stdout.trim(), VERSION)
    assert.strictEqual(cacheFiles(dir).length, 2)
  })

  it("a corrupt cache is refused by V8, the bundle compiles, and a good cache replaces it", { timeout: 60_000 }, async () => {
    const dir = packageCopy()
    await run(dir)
    const [name] = cacheFiles(dir)
    const file = path.join(dir, "dist/v8-cache", name!)
    fs.writeFileSync(file, Buffer.alloc(4096, 0x5a))
    const r = await run(dir)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(r.stdout.trim(), VERSION)
    assert.isAbove(fs.statSync(file).size, 100_000, "rewritten at exit")
    assert.notStrictEqual(fs.readFileSync(file).subarray(0, 4096).toString("latin1"), "Z".repeat(4096))
  })

  it("where the cache cannot be written, every run still works and leaves nothing behind", { timeout: 60_000 }, async () => {
    const dir = packageCopy()
    // A file where the cache folder should be: mkdir fails (as on a read-only package folder, which root would not feel).
    fs.writeFileSync(path.join(dir, "dist/v8-cache"), "")
    for (let i = 0; i < 2; i++) {
      const r = await run(dir)
      assert.strictEqual(r.code, 0, r.stderr)
      assert.strictEqual(r.stdout.trim(), VERSION)
      assert.strictEqual(r.stderr, "")
    }
    assert.deepStrictEqual(fs.readdirSync(path.join(dir, "dist")).sort(), ["pynchy.cjs", "v8-cache"])
  })
})
