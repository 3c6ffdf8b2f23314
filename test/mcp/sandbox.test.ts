/**
 * Sandbox MCP servers, started by the real runner inside a real bwrap sandbox and called by a
 * scripted model through the real gateway: their tools are offered as `<server>__<tool>` with
 * the schemas of `tools/list`; the server runs in /workspace with no network; a server that
 * crashes or hangs on a call is a tool error the model reads, one that does not start is named in
 * the system prompt, and the turn ends with the model's answer in every case.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Hit } from "../gateway/support.js"
import { runTurn, spoken } from "../agent/harness.js"
import { openaiStream, type StreamedCall } from "../agent/sse.js"
import { skipWithout } from "../support/system.js"
import { copyInto, sandboxLaunch } from "./fixture.js"

const rounds = (calls: ReadonlyArray<StreamedCall>) => (_hit: Hit, res: any, n: number) => (n === 1 ? openaiStream(res, [], calls) : openaiStream(res, ["done"]))
const toolResults = (hit: Hit): Array<string> => hit.body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content)

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("MCP servers in the sandbox", () => {
  it.scopedLive("its tools are offered with their schemas and answer; the server runs in /workspace without network", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        spec: { sandboxTools: [], mcpServers: [{ ...sandboxLaunch("notes", "ok"), tools: ["echo", "where", "fail"] }] },
        workspace: copyInto,
        script: rounds([
          { id: "c1", name: "notes__echo", input: { text: "hi there" } },
          { id: "c2", name: "notes__where", input: {} },
          { id: "c3", name: "notes__fail", input: {} },
          { id: "c4", name: "notes__add", input: { a: 1, b: 2 } }
        ])
      })
      const offered = run.upstream.hits[0]!.body.tools.map((t: any) => t.function)
      // The allowlist leaves `add` out; the schemas are the server's own.
      assert.deepStrictEqual(offered.map((f: any) => f.name), ["notes__echo", "notes__where", "notes__fail"])
      assert.deepStrictEqual(offered[0].parameters, { type: "object", properties: { text: { type: "string" } }, required: ["text"] })
      const [echo, where, fail, add] = toolResults(run.upstream.hits[1]!)
      assert.strictEqual(echo, "echo: hi there")
      const seen = JSON.parse(where!)
      assert.deepStrictEqual({ cwd: seen.cwd, network: seen.network, workspace: seen.workspace, hostname: seen.hostname }, { cwd: "/workspace", network: "unreachable", workspace: true, hostname: "agent" })
      assert.strictEqual(fail, "error: the fixture always fails this one")
      // Not offered, so not an MCP tool: it went to the host, which knows no such tool.
      assert.include(add, "unknown_tool")
      assert.deepStrictEqual(spoken(run).at(-1), "reply:done")
    }))

  it.scopedLive("a server that crashes on a call and one that hangs past its deadline are tool errors; the turn answers", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        spec: { sandboxTools: [], mcpServers: [sandboxLaunch("crashy", "crash"), sandboxLaunch("stuck", "hang", 1)] },
        workspace: copyInto,
        script: rounds([
          { id: "c1", name: "crashy__echo", input: { text: "x" } },
          { id: "c2", name: "crashy__echo", input: { text: "again" } },
          { id: "c3", name: "stuck__echo", input: { text: "y" } }
        ])
      })
      const [crashed, after, hung] = toolResults(run.upstream.hits[1]!).map((r) => JSON.parse(r.replace(/^error: /, "")))
      assert.strictEqual(crashed.code, "mcp_server_exited")
      assert.strictEqual(after.code, "mcp_server_exited")
      assert.strictEqual(hung.code, "mcp_call_timeout")
      assert.deepStrictEqual(spoken(run).at(-1), "reply:done")
    }))

  it.scopedLive("a server that dies says why: the last 2 KB of its stderr, redacted, in the tool error and the runner's log", () =>
    Effect.gen(function* () {
      const secret = "hunter2-notes-secret"
      const run = yield* runTurn({
        spec: { sandboxTools: [], mcpServers: [{ ...sandboxLaunch("loud", "crash-loud"), env: { PYNCHY_MCP_FIXTURE_SECRET: secret } }] },
        workspace: copyInto,
        script: rounds([{ id: "c1", name: "loud__echo", input: { text: "x" } }])
      })
      const [died] = toolResults(run.upstream.hits[1]!).map((r) => JSON.parse(r.replace(/^error: /, "")))
      assert.strictEqual(died.code, "mcp_server_exited")
      const tail: string = died.stderr
      assert.include(tail, "fixture crashed: cannot open the notes db (secret [redacted], key [redacted])")
      assert.isAtMost(Buffer.byteLength(tail), 2048)
      assert.isFalse(tail.startsWith("noise noise"), "the tail, not the head")
      for (const leak of [secret, "sk-live-", "\u001b", "\u0007"]) assert.notInclude(tail, leak)
      const log = fs.readFileSync(path.join(run.hostDir, "runner.log"), "utf8")
      assert.include(log, "fixture crashed: cannot open the notes db (secret [redacted], key [redacted])")
      assert.include(log, "loud")
      assert.notInclude(log, secret)
      assert.deepStrictEqual(spoken(run).at(-1), "reply:done")
    }))

  it.scopedLive("a server that does not start offers no tools and is named in the system prompt with its code", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        spec: {
          sandboxTools: [],
          mcpServers: [sandboxLaunch("gone", "dead"), { name: "missing", command: "/usr/bin/no-such-mcp-server", args: [], env: {}, timeoutSeconds: 5 }],
          unavailableServers: [{ server: "remote", code: "mcp_start_timeout", reason: "MCP server 'remote' did not start within 5s" }]
        },
        workspace: copyInto,
        script: (_hit, res) => openaiStream(res, ["fine"])
      })
      const first = run.upstream.hits[0]!.body
      assert.isUndefined(first.tools)
      const system: string = first.messages[0].content
      assert.include(system, "# Tool servers unavailable this turn")
      assert.include(system, "- remote (mcp_start_timeout)")
      assert.match(system, /- gone \(mcp_(server_exited|start_failed)\)/)
      assert.include(system, "- missing (mcp_start_failed)")
      assert.deepStrictEqual(spoken(run).at(-1), "reply:fine")
    }))
})
