/**
 * What the runner's request holds and how it streams, through the real gateway and bwrap: the
 * summary and the earlier exchange (in order, senders prefixed) before the new message, for both
 * cores; text deltas reach the host before the one reply; AGENTS.md and MEMORY.md reach the system
 * prompt (cut at 20 KB with a note), and a FIFO planted as MEMORY.md does not hang the turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { HistoryEntry } from "../../src/protocol/ipc.js"
import { skipWithout } from "../support/system.js"
import { anthropicStream, openaiStream } from "./sse.js"
import { runTurn, spoken } from "./harness.js"

const history: ReadonlyArray<HistoryEntry> = [
  { role: "user", text: "my name is Zed", sender: "Zed" },
  { role: "assistant", text: "Nice to meet you, Zed." },
  { role: "user", text: "I like tea" },
  { role: "assistant", text: "Noted." }
]
const messages = [{ id: 7, sender: "Zed", text: "what is my name?", createdAt: 1 }]
const summary = "Zed asked about the weather in Lyon earlier."

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("the runner's request, through the gateway and bwrap", () => {
  it.scopedLive("openai: system (with the summary), the history in order, then the new message; streamed deltas before the reply", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({ core: "openai", spec: { history, messages, summary }, script: (_hit, res) => openaiStream(res, ["Your ", "name ", "is Zed."]) })
      const body = run.upstream.hits[0]!.body
      assert.isTrue(body.stream)
      assert.deepStrictEqual(body.stream_options, { include_usage: true })
      assert.strictEqual(body.messages[0].role, "system")
      assert.include(body.messages[0].content, "Be brief.")
      assert.include(body.messages[0].content, summary)
      assert.isBelow(body.messages[0].content.indexOf("Be brief."), body.messages[0].content.indexOf(summary))
      assert.deepStrictEqual(body.messages.slice(1), [
        { role: "user", content: "Zed: my name is Zed" },
        { role: "assistant", content: "Nice to meet you, Zed." },
        { role: "user", content: "I like tea" },
        { role: "assistant", content: "Noted." },
        { role: "user", content: "what is my name?" }
      ])
      assert.deepStrictEqual(spoken(run), ["delta:Your ", "delta:name ", "delta:is Zed.", "reply:Your name is Zed."])
      assert.strictEqual(run.events.at(-2)?._tag, "done")
    }))

  it.scopedLive("anthropic: system (with the summary), alternating history, then the new message; streamed deltas before the reply", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        core: "anthropic",
        spec: { history: [{ role: "assistant", text: "Welcome." }, ...history], messages, summary, sandboxTools: ["bash", "read_file"] },
        script: (_hit, res) => anthropicStream(res, ["Your ", "name ", "is Zed."])
      })
      const hit = run.upstream.hits[0]!
      assert.strictEqual(hit.path, "/v1/messages")
      assert.isTrue(hit.body.stream)
      assert.include(hit.body.system, summary)
      assert.deepStrictEqual(hit.body.tools.map((t: any) => t.name), ["bash", "read_file"])
      // A history that starts with a reply gets a user line first: the Messages API starts with the user.
      assert.deepStrictEqual(hit.body.messages.map((m: any) => m.role), ["user", "assistant", "user", "assistant", "user", "assistant", "user"])
      assert.deepStrictEqual(hit.body.messages.slice(2).map((m: any) => m.content), [
        "Zed: my name is Zed", "Nice to meet you, Zed.", "I like tea", "Noted.", "what is my name?"
      ])
      assert.deepStrictEqual(spoken(run), ["delta:Your ", "delta:name ", "delta:is Zed.", "reply:Your name is Zed."])
    }))

  it.scopedLive("without a summary or history the request is the system prompt and the new message", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({ core: "openai", spec: { messages }, script: (_hit, res) => openaiStream(res, ["ok"]) })
      const body = run.upstream.hits[0]!.body
      assert.deepStrictEqual(body.messages, [{ role: "system", content: "Be brief." }, { role: "user", content: "what is my name?" }])
    }))

  it.scopedLive("AGENTS.md and MEMORY.md reach the system prompt; past 20 KB MEMORY.md is cut with a note", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        core: "anthropic",
        workspace: (dir) => {
          fs.writeFileSync(path.join(dir, "AGENTS.md"), "agents-marker: answer in French.\n")
          fs.writeFileSync(path.join(dir, "MEMORY.md"), `memory-marker: Zed likes tea.\n${"m".repeat(30 * 1024)}\nmemory-tail-marker\n`)
        },
        script: (_hit, res) => anthropicStream(res, ["ok"])
      })
      const system: string = run.upstream.hits[0]!.body.system
      assert.include(system, "agents-marker: answer in French.")
      assert.include(system, "memory-marker: Zed likes tea.")
      assert.notInclude(system, "memory-tail-marker")
      assert.match(system, /MEMORY\.md is cut here: \d+ more bytes/)
      assert.isBelow(system.indexOf("agents-marker"), system.indexOf("memory-marker"))
      assert.deepStrictEqual(spoken(run), ["delta:ok", "reply:ok"])
    }))

  it.scopedLive("a FIFO planted as MEMORY.md and a link as AGENTS.md are left out, and the turn does not hang", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        core: "openai",
        workspace: (dir) => {
          execFileSync("mkfifo", [path.join(dir, "MEMORY.md")])
          fs.writeFileSync(path.join(dir, "real.md"), "linked-marker")
          fs.symlinkSync("real.md", path.join(dir, "AGENTS.md"))
        },
        script: (_hit, res) => openaiStream(res, ["ok"])
      })
      assert.deepStrictEqual(spoken(run), ["delta:ok", "reply:ok"])
      const system: string = run.upstream.hits[0]!.body.messages[0].content
      assert.notInclude(system, "MEMORY.md")
      assert.notInclude(system, "linked-marker")
      assert.isBelow(run.ms, 30_000)
    }))

  it.scopedLive("an upstream that ignores stream: true still answers the turn (one delta, one reply)", () =>
    Effect.gen(function* () {
      const run = yield* runTurn({
        core: "openai",
        script: (_hit, res) => {
          const body = JSON.stringify({ id: "c", object: "chat.completion", model: "tiny", choices: [{ index: 0, message: { role: "assistant", content: "whole" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })
          res.writeHead(200, { "content-type": "application/json" })
          res.end(body)
        }
      })
      assert.deepStrictEqual(spoken(run), ["delta:whole", "reply:whole"])
    }))

  for (const core of ["openai", "anthropic"] as const) {
    it.scopedLive(`${core}: a stream the upstream breaks mid-way fails the turn as stream_interrupted (retryable), after the deltas it had`, () =>
      Effect.gen(function* () {
        const run = yield* runTurn({
          core,
          script: (_hit, res) => {
            res.writeHead(200, { "content-type": "text/event-stream" })
            const first = core === "openai"
              ? `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "tiny", choices: [{ index: 0, delta: { content: "partial" }, finish_reason: null }] })}\n\n`
              : `event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { id: "m", type: "message", role: "assistant", model: "tiny", content: [], usage: { input_tokens: 1, output_tokens: 1 } } })}\n\n` +
                `event: content_block_start\ndata: ${JSON.stringify({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })}\n\n` +
                `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "partial" } })}\n\n`
            res.write(first, () => setTimeout(() => res.socket?.destroy(), 50))
          }
        })
        assert.deepStrictEqual(spoken(run), ["delta:partial", "error:stream_interrupted"])
        const error = run.events.find((e) => e._tag === "error")
        assert.isTrue(error?._tag === "error" && error.fatal && error.retryable)
      }))
  }
})
