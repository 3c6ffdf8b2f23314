/** The runner's pieces without a sandbox: the SSE parser, the request's message order, globs, input checks, caps, workspace files. */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { alternating, conversation, summarySection } from "../../src/agent/context.js"
import { type SseEvent, sseParser } from "../../src/agent/gateway-client.js"
import { check } from "../../src/agent/tools/input.js"
import { capped } from "../../src/agent/tools/output.js"
import { bash, toolEnv } from "../../src/agent/tools/bash.js"
import { globTest } from "../../src/agent/tools/walk.js"
import { readWorkspaceFiles } from "../../src/agent/workspace-files.js"
import { tempDir } from "../support/db.js"
import { baseSpec } from "./harness.js"

describe("runner units", () => {
  it("the SSE parser assembles events split anywhere, with CRLF, comments and multi-line data", () => {
    const text = ": comment\r\nevent: a\r\ndata: {\"x\":1}\r\n\r\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n"
    for (let cut = 0; cut < text.length; cut++) {
      const events: Array<SseEvent> = []
      const p = sseParser((e) => events.push(e))
      p.push(text.slice(0, cut))
      p.push(text.slice(cut))
      p.end()
      assert.deepStrictEqual(events, [{ event: "a", data: "{\"x\":1}" }, { event: "message", data: "line1\nline2" }, { event: "message", data: "[DONE]" }])
    }
  })

  it("history then new messages; senders prefixed on user entries; Messages form alternates and starts with the user", () => {
    const turn = {
      ...baseSpec("anthropic"),
      history: [{ role: "assistant" as const, text: "hi" }, { role: "user" as const, text: "a", sender: "Ann" }, { role: "user" as const, text: "b" }],
      messages: [{ id: 1, sender: "u", text: "c", createdAt: 0 }, { id: 2, sender: "u", text: "d", createdAt: 0 }]
    }
    assert.deepStrictEqual(conversation(turn).map((t) => `${t.role}:${t.text}`), ["assistant:hi", "user:Ann: a", "user:b", "user:c", "user:d"])
    assert.deepStrictEqual(alternating(conversation(turn)).map((t) => `${t.role}:${t.text}`), [
      "user:(earlier in this conversation)", "assistant:hi", "user:Ann: a\n\nb\n\nc\n\nd"
    ])
    assert.deepStrictEqual(summarySection(null), [])
    assert.deepStrictEqual(summarySection("  "), [])
  })

  it("globs match names without a slash and paths with one", () => {
    assert.isTrue(globTest("*.md")("a/b/NOTES.md"))
    assert.isFalse(globTest("*.md")("a/b/NOTES.txt"))
    assert.isTrue(globTest("notes/**/*.txt")("notes/x/y/z.txt"))
    assert.isTrue(globTest("notes/**/*.txt")("notes/z.txt"))
    assert.isFalse(globTest("notes/*.txt")("notes/x/z.txt"))
    assert.isTrue(globTest("a?c.(1)")("abc.(1)"))
  })

  it("input checks name the field and never echo its value", () => {
    assert.deepStrictEqual(check({ path: "x" }, { path: { type: "string", required: true } }), { ok: true, value: { path: "x" } })
    const bad = check({ path: "secret-value", extra: 1 }, { path: { type: "string" } })
    assert.isFalse(bad.ok)
    if (!bad.ok) assert.notInclude(bad.error, "secret-value")
    assert.deepStrictEqual(check([], {}), { ok: false, error: "the input must be a JSON object" })
    assert.deepStrictEqual(check({ n: 1.5 }, { n: { type: "integer" } }), { ok: false, error: "'n' must be an integer" })
    assert.deepStrictEqual(check({}, { n: { type: "integer", required: true } }), { ok: false, error: "'n' is required" })
  })

  it("the cap keeps the head and says what was cut", () => {
    assert.strictEqual(capped("abc", "h", 5), "abc")
    assert.strictEqual(capped("abcdefg", "h", 5), "abcde\n[output cut: 2 of 7 characters not shown; h]")
  })

  it("workspace files: capped with the cut counted, a FIFO, a link and a folder left out, without blocking", () => {
    const dir = tempDir("pynchy-wsf-")
    fs.writeFileSync(path.join(dir, "AGENTS.md"), "é".repeat(20))
    execFileSync("mkfifo", [path.join(dir, "MEMORY.md")])
    assert.deepStrictEqual(readWorkspaceFiles(dir, 11), [{ name: "AGENTS.md", text: "é".repeat(5), cutBytes: 29 }])
    fs.rmSync(path.join(dir, "MEMORY.md"))
    fs.symlinkSync("/etc/hostname", path.join(dir, "MEMORY.md"))
    assert.deepStrictEqual(readWorkspaceFiles(dir).map((f) => f.name), ["AGENTS.md"])
    fs.rmSync(path.join(dir, "MEMORY.md"))
    fs.mkdirSync(path.join(dir, "MEMORY.md"))
    assert.deepStrictEqual(readWorkspaceFiles(dir).map((f) => f.name), ["AGENTS.md"])
  })

  it("the bash tool's environment has no turn token; a bad input is an error result", async () => {
    assert.notProperty(toolEnv({ PYNCHY_TURN_TOKEN: "t", PATH: "/bin" }), "PYNCHY_TURN_TOKEN")
    const dir = tempDir("pynchy-bash-")
    const before = process.env.PYNCHY_WORKSPACE_DIR
    process.env.PYNCHY_WORKSPACE_DIR = dir
    process.env.PYNCHY_TURN_TOKEN = "unit-token-canary"
    try {
      const out = await bash.run({ command: "env; pwd; exit 3" })
      assert.isTrue(out.ok)
      assert.notInclude(out.output, "unit-token-canary")
      assert.include(out.output, fs.realpathSync(dir))
      assert.include(out.output, "[exit code 3]")
      assert.deepStrictEqual(await bash.run({ command: "" }), { ok: false, output: "'command' must not be empty" })
      assert.deepStrictEqual(await bash.run({ command: "true", timeoutSeconds: 0 }), { ok: false, output: "'timeoutSeconds' must be at least 1" })
    } finally {
      delete process.env.PYNCHY_TURN_TOKEN
      if (before === undefined) delete process.env.PYNCHY_WORKSPACE_DIR
      else process.env.PYNCHY_WORKSPACE_DIR = before
    }
  })
})
