/**
 * `pynchy send` with bad input, as a real process (the built CLI): every refusal is one clear
 * line naming what is wrong, with no stack frame, and nothing is stored. The text limits are the
 * HTTP API's (MAX_TEXT_CHARS, src/domain/message.ts), and a conversation id never holds a control
 * character (src/domain/place.ts). Issue 43 item 8.
 */
import { assert, describe, it } from "@effect/vitest"
import { hostProject } from "../channels/host-process.js"
import { MAX_TEXT_CHARS } from "../../src/domain/message.js"

const noStack = (stderr: string) => assert.notMatch(stderr, /^\s+at |\.cjs:\d+|node:internal|ParseError|\{$/m, stderr)

describe("pynchy send refuses bad input in one line", () => {
  it("bad conversation ids and texts: exit 1, one line naming the problem, nothing stored", { timeout: 180_000 }, async () => {
    const project = hostProject({ yaml: () => ["routes: [{ connection: web, place: \"*\", workspace: main }, { connection: cli, place: \"*\", workspace: main }]"] })
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, RegExp]> = [
      [["-c", "", "hi"], /^conversation: /],
      [["-c", "web: ", "hi"], /^conversation: .*place.*space/],
      [["-c", `web:${"p".repeat(100_000)}`, "hi"], /^conversation: .*place.*1-255 characters/],
      [["-c", "web:a\nb", "hi"], /^conversation: .*control characters/],
      [["-c", "web:..", "hi"], /^conversation: .*'\.\.'/],
      [["-c", "cli:x", ""], /^text: must be 1-100,000 characters/],
      [["-c", "cli:x", "x".repeat(MAX_TEXT_CHARS + 1)], /^text: must be 1-100,000 characters/]
    ]
    for (const [args, expected] of cases) {
      const r = await project.cli(["send", ...args])
      const label = JSON.stringify(args.map((a) => (a.length > 40 ? `${a.slice(0, 20)}...(${a.length})` : a)))
      assert.strictEqual(r.code, 1, `${label}: ${r.stderr}`)
      noStack(r.stderr)
      const lines = r.stderr.trim().split("\n")
      assert.strictEqual(lines.length, 1, `${label}: one line, got ${lines.length}: ${r.stderr.slice(0, 500)}`)
      assert.match(lines[0]!, expected, label)
      assert.isBelow(lines[0]!.length, 300, `${label}: the value is not echoed`)
    }
    const stored = project.query("SELECT COUNT(*) AS n FROM messages") as Array<{ n: number }>
    assert.strictEqual(stored[0]!.n, 0)
    // The longest text the HTTP API takes is taken here too.
    const ok = await project.cli(["send", "-c", "cli:x", "x".repeat(MAX_TEXT_CHARS)])
    assert.strictEqual(ok.code, 0, ok.stderr)
  })
})
