/**
 * Every ```yaml block of README.md and docs/ goes through `config check` (checkConfig, the
 * function the command runs). A block written to show a mistake says so on one line,
 * `# expect-error: <path>`, and the check must name that path. Environment variables a block
 * names in `apiKeyEnv`, `tokenEnv` and the like are set (to a dummy), as the reader's would be.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Logger, LogLevel } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { checkConfig } from "../../src/host/preflight.js"
import { tempDir } from "../support/db.js"

const repo = path.resolve(import.meta.dirname, "../..")

const markdown = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdown(path.join(dir, e.name)) : e.name.endsWith(".md") ? [path.join(dir, e.name)] : []
  )

const blocks = [path.join(repo, "README.md"), ...markdown(path.join(repo, "docs"))].flatMap((file) => {
  const text = fs.readFileSync(file, "utf8")
  return [...text.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => ({
    where: `${path.relative(repo, file)}:${text.slice(0, m.index).split("\n").length}`,
    yaml: m[1]!
  }))
})

describe("every yaml example in README.md and docs/ passes config check", () => {
  it("finds the blocks", () => assert.isAtLeast(blocks.length, 6))

  for (const block of blocks) {
    const expectError = /^#\s*expect-error:\s*(\S+)/m.exec(block.yaml)?.[1]
    it.effect(`${block.where}${expectError !== undefined ? ` (fails on ${expectError})` : ""}`, () =>
      Effect.gen(function* () {
        const dir = tempDir("pynchy-doc-")
        const file = path.join(dir, "pynchy.yaml")
        fs.writeFileSync(file, block.yaml)
        const env = new Map([["PYNCHY_CONFIG", file], ["PYNCHY_DATA_DIR", path.join(dir, "data")]])
        for (const m of block.yaml.matchAll(/[A-Za-z]*Env:\s*([A-Z_][A-Z0-9_]*)/g)) env.set(m[1]!, "sk-doc-example")
        const result = yield* checkConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(env)), Logger.withMinimumLogLevel(LogLevel.None))
        const lines = result.problems.map((p) => `${p.path}: ${p.reason}`)
        if (expectError === undefined) assert.deepStrictEqual(lines, [], `${block.where} should pass config check, got ${lines.join(" | ")}`)
        else assert.isTrue(result.problems.some((p) => p.path === expectError), `${block.where}: expected ${expectError}, got ${lines.join(" | ")}`)
      }), 60_000)
  }
})
