/**
 * The sandbox tools, run by the real runner inside bwrap, called by scripted models through the
 * real gateway: bash writes into the host's workspace folder and never sees the provider key or
 * the turn token; the file tools each work and fail readably; a command past its timeout is killed
 * with its children; output over the cap is cut with a note; tool rounds stay bounded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Hit } from "../gateway/support.js"
import { skipWithout } from "../support/system.js"
import { anthropicStream, openaiStream, type StreamedCall } from "./sse.js"
import { CANARY, runTurn, spoken, transcript } from "./harness.js"

/** OpenAI: round n makes the calls of `rounds[n - 1]`, then answers "done". */
const openaiRounds = (rounds: ReadonlyArray<ReadonlyArray<StreamedCall>>) => (_hit: Hit, res: any, n: number) =>
  n <= rounds.length ? openaiStream(res, [], rounds[n - 1]) : openaiStream(res, ["done"])

/** The tool results the model saw in the request of round n (OpenAI form). */
const toolResults = (hit: Hit): Array<string> => hit.body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content)

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("sandbox tools in the runner, through the gateway and bwrap", () => {
  it.scopedLive("bash writes a file that is then in the host's workspace folder; its output holds neither the provider key nor the turn token", () =>
    Effect.gen(function* () {
      const command = "echo hi > note.txt; env; echo; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/1/environ; cat /proc/$PPID/cmdline"
      const run = yield* runTurn({ core: "openai", script: openaiRounds([[{ id: "call_1", name: "bash", input: { command } }]]) })
      assert.deepStrictEqual(spoken(run).at(-1), "reply:done")
      assert.strictEqual(fs.readFileSync(path.join(run.workspaceDir, "note.txt"), "utf8"), "hi\n")
      const [result] = toolResults(run.upstream.hits[1]!)
      // The command ran (its env is there), and neither secret is in anything it could read.
      assert.include(result, "PYNCHY_WORKSPACE_DIR=/workspace")
      assert.include(result, "[exit code 0]")
      assert.notInclude(result, CANARY)
      assert.notInclude(result, run.token)
      // The token was never in any environment, and the runner's own is closed to its tools (not dumpable).
      assert.notInclude(result, "PYNCHY_TURN_TOKEN")
      assert.match(result!, /\/proc\/\d+\/environ: Permission denied/)
      for (const line of fs.readFileSync(path.join(run.sessionDir, "transcript.jsonl"), "utf8").split("\n")) {
        assert.notInclude(line, run.token)
        assert.notInclude(line, CANARY)
      }
      const calls = transcript(run).filter((e) => e.kind === "tool_call" || e.kind === "tool_result")
      assert.deepStrictEqual(calls.map((e) => `${e.kind}:${e.tool}`), ["tool_call:bash", "tool_result:bash"])
      assert.strictEqual(calls[0]!.input.command, command)
    }))

  it.scopedLive("write, edit, read, list and search each work, and their errors are results the model reads (anthropic)", () =>
    Effect.gen(function* () {
      const uses: Array<StreamedCall> = [
        { id: "t1", name: "write_file", input: { path: "notes/a.txt", content: "alpha\nbeta\nbeta two\n" } },
        { id: "t2", name: "edit_file", input: { path: "notes/a.txt", old: "beta\n", new: "gamma\n" } },
        { id: "t3", name: "edit_file", input: { path: "notes/a.txt", old: "a", new: "b" } },
        { id: "t4", name: "edit_file", input: { path: "notes/a.txt", old: "missing", new: "x" } },
        { id: "t5", name: "read_file", input: { path: "notes/a.txt", offset: 2, limit: 1 } },
        { id: "t6", name: "list_files", input: { pattern: "*.txt" } },
        { id: "t7", name: "search_files", input: { pattern: "gam+a" } },
        { id: "t8", name: "read_file", input: { path: "nope.txt" } },
        { id: "t9", name: "write_file", input: { path: 42 } },
        { id: "t10", name: "read_file", input: { path: "/workspace/notes/a.txt" } },
        { id: "t11", name: "write_file", input: { path: "skills/x.md", content: "no" } }
      ]
      const run = yield* runTurn({
        core: "anthropic",
        script: (_hit, res, n) => (n === 1 ? anthropicStream(res, ["Working."], uses) : anthropicStream(res, ["done"]))
      })
      assert.deepStrictEqual(spoken(run), ["delta:Working.", "delta:done", "reply:done"])
      assert.strictEqual(fs.readFileSync(path.join(run.workspaceDir, "notes", "a.txt"), "utf8"), "alpha\ngamma\nbeta two\n")
      const hit = run.upstream.hits[1]!
      assert.deepStrictEqual(hit.body.messages.at(-2).content.map((b: any) => b.type), ["text", ...uses.map(() => "tool_use")])
      const results = hit.body.messages.at(-1).content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>
      const byId = Object.fromEntries(results.map((r) => [r.tool_use_id, r]))
      assert.include(byId.t1!.content, "wrote 20 bytes to notes/a.txt")
      assert.include(byId.t2!.content, "edited notes/a.txt at line 2")
      assert.isTrue(byId.t3!.is_error)
      assert.match(byId.t3!.content, /occurs 5 times; include more surrounding text/)
      assert.isTrue(byId.t4!.is_error)
      assert.include(byId.t4!.content, "not found")
      assert.strictEqual(byId.t5!.content, "2\tgamma\n[lines 2-2 of 3; read on with offset 3]")
      assert.strictEqual(byId.t6!.content, "notes/a.txt")
      assert.strictEqual(byId.t7!.content, "notes/a.txt:2: gamma")
      assert.isTrue(byId.t8!.is_error)
      assert.include(byId.t8!.content, "no such file")
      assert.isTrue(byId.t9!.is_error)
      assert.include(byId.t9!.content, "'path' must be a string")
      assert.include(byId.t10!.content, "1\talpha")
      assert.isTrue(byId.t11!.is_error)
      assert.include(byId.t11!.content, "skills/x.md: read-only here")
    }))

  it.scopedLive("a bash command that outlives its timeout is killed with its children; the next call sees them gone", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        core: "openai",
        script: openaiRounds([
          [{ id: "c1", name: "bash", input: { command: "sleep 300 & echo $! > child.pid; echo started; sleep 300", timeoutSeconds: 1 } }],
          [{ id: "c2", name: "bash", input: { command: "if kill -0 $(cat child.pid) 2>/dev/null; then echo child-alive; else echo child-gone; fi" } }]
        ])
      })
      assert.deepStrictEqual(spoken(run).at(-1), "reply:done")
      const [first] = toolResults(run.upstream.hits[1]!)
      assert.include(first, "started")
      assert.include(first, "killed after the 1 s timeout")
      const [, second] = toolResults(run.upstream.hits[2]!)
      assert.include(second, "child-gone")
      assert.isBelow(run.ms, 30_000)
    }))

  it.scopedLive("output over 30,000 characters is cut with a note saying what was cut", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        core: "openai",
        script: openaiRounds([[{ id: "c1", name: "bash", input: { command: "head -c 100000 /dev/zero | tr '\\0' a" } }]])
      })
      const [result] = toolResults(run.upstream.hits[1]!)
      assert.isTrue(result!.startsWith("a".repeat(30_000) + "\n[output cut: "))
      assert.match(result!, /output cut: 70014 of 100014 characters not shown/)
      assert.isBelow(result!.length, 30_200)
    }))

  it.scopedLive("only the turn's sandbox tools are offered; others and unknown names go to the host; rounds stop at maxToolRounds", () =>
    Effect.gen(function* () {
      const hostCalls: Array<string> = []
      const loop: Array<StreamedCall> = [{ id: "c", name: "bash", input: { command: "echo again >> loop.txt" } }]
      const run = yield* runTurn({
        core: "openai",
        spec: {
          sandboxTools: ["read_file"],
          maxToolRounds: 2,
          tools: [{ name: "hello__greet", action: "hello.greet", description: "Greets.", inputSchema: { type: "object" } }]
        },
        hostTool: (tool) => {
          hostCalls.push(tool)
          return { ok: true, output: { text: "from host" } }
        },
        // The model keeps calling tools; the third request offers none and its answer is the reply.
        script: (_hit, res, n) => (n <= 2 ? openaiStream(res, [], loop) : openaiStream(res, ["stopped"], loop))
      })
      const offered = run.upstream.hits[0]!.body.tools.map((t: any) => t.function.name)
      assert.deepStrictEqual(offered, ["read_file", "hello__greet"])
      // bash is not a sandbox tool in this turn: it went to the host, which answered.
      assert.deepStrictEqual(hostCalls, ["bash", "bash"])
      assert.isFalse(fs.existsSync(path.join(run.workspaceDir, "loop.txt")))
      assert.strictEqual(run.upstream.hits.length, 3)
      assert.isUndefined(run.upstream.hits[2]!.body.tools)
      assert.deepStrictEqual(spoken(run).at(-1), "reply:stopped")
    }))
})
