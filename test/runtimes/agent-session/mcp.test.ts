import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Database from "../../../src/db/Database.js"
import { MessageStore } from "../../../src/db/MessageStore.js"
import { ConnectionName, ConversationId, WorkspaceId } from "../../../src/domain/ids.js"
import { BIN, cleanEnv, runCli } from "../../support/cli.js"
import { tempDir } from "../../support/db.js"
import { skipWithout } from "../../support/system.js"
import { EXAMPLE, startTmux } from "./tmux.js"

const skip = skipWithout("tmux", "apt-get install -y tmux")

/** The shipped binary (global setup builds it); the test runs nothing else. */
const SERVER = { command: process.execPath, args: [BIN, "mcp"] }

const conversation = ConversationId.make("terminal:default")

/** A host database holding one conversation (as a host would have left it). */
const seedDatabase = (dataDir: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* MessageStore
      yield* store.ingestBatch([{
        conversationId: conversation,
        connection: ConnectionName.make("terminal"),
        place: "default",
        workspace: WorkspaceId.make("main"),
        providerEventId: "seed-1",
        sender: "me",
        text: "hello from the terminal",
        metadata: {}
      }])
    }).pipe(Effect.provide(Layer.provide(MessageStore.layer, Database.layerFile(path.join(dataDir, "pynchy.db")))))
  )

describe.skipIf(skip)("pynchy mcp, driven by the SDK client as a subprocess", () => {
  let tmux: ReturnType<typeof startTmux>
  const home = tempDir("pynchy-mcp-")
  const dataDir = path.join(home, "data")
  const attachmentDir = path.join(home, "attachments")
  beforeAll(async () => {
    const help = await runCli(["--help"], { cwd: tempDir() })
    if (!/^\s*- mcp\b/m.test(help.stdout)) throw new Error(`the built bin (${BIN}) has no mcp command: run \`npm run build\` (exit ${help.code}: ${help.stderr.slice(0, 300)})`)
    tmux = startTmux()
    fs.mkdirSync(dataDir, { recursive: true })
    await seedDatabase(dataDir)
  })
  afterAll(() => tmux?.stop())

  const connect = async (withRuntime: boolean) => {
    const env: Record<string, string> = {
      ...cleanEnv(),
      PYNCHY_DATA_DIR: dataDir,
      PYNCHY_ATTACHMENT_STORE_DIR: attachmentDir,
      LOCAL_TMUX_SOCKET: tmux.socket
    }
    if (withRuntime) env.PYNCHY_AGENT_SESSION_RUNTIME_MODULES = EXAMPLE
    const client = new Client({ name: "pynchy-test", version: "1.0.0" })
    await client.connect(new StdioClientTransport({ ...SERVER, cwd: home, env, stderr: "ignore" }))
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const result = await client.callTool({ name, arguments: args })
      const text = (result.content as Array<{ type: string; text: string }>)[0]!.text
      return { isError: result.isError === true, text, value: result.isError === true ? undefined : JSON.parse(text) }
    }
    return { client, call }
  }

  it.live("lists, sends, reads, attaches, inspects, continues, and keeps attachments across a restart", () =>
    Effect.promise(async () => {
      // First process.
      const first = await connect(true)
      const tools = (await first.client.listTools()).tools.map((t) => t.name).sort()
      assert.deepStrictEqual(tools, [
        "attach_session", "attachment_history", "continue_session", "detach_session", "inspect_session",
        "list_conversations", "list_runtimes", "read_recent", "send_message"
      ])
      assert.deepStrictEqual((await first.call("list_runtimes")).value.map((r: { id: string }) => r.id), ["local-tmux"])
      const listed = (await first.call("list_conversations")).value
      assert.deepStrictEqual(listed.map((c: { id: string; attachment: unknown }) => [c.id, c.attachment]), [["terminal:default", null]])

      const sent = await first.call("send_message", { conversationId: conversation, text: "a message from mcp" })
      assert.isFalse(sent.isError, sent.text)
      assert.strictEqual(sent.value.duplicate, false)
      const recent = (await first.call("read_recent", { conversationId: conversation })).value
      assert.deepStrictEqual(recent.messages.map((m: { text: string; sender: string }) => [m.sender, m.text]), [
        ["me", "hello from the terminal"],
        ["mcp", "a message from mcp"]
      ])
      assert.deepStrictEqual(recent.turns, [])
      assert.deepStrictEqual(recent.replies, [])

      const attached = await first.call("attach_session", { conversationId: conversation, runtimeId: "local-tmux", sessionId: "work" })
      assert.isFalse(attached.isError, attached.text)
      assert.strictEqual(attached.value.attachment.provider, "tmux")
      const inspected = (await first.call("inspect_session", { conversationId: conversation })).value
      assert.strictEqual(inspected.status.state, "idle")
      assert.isTrue(inspected.applied)
      const continued = (await first.call("continue_session", { conversationId: conversation, prompt: "echo mcp-$((40+2))" })).value
      assert.match(continued.finalResponse, /^mcp-42$/m)

      // Typed refusals come back as tool errors naming the problem.
      const unknownRuntime = await first.call("attach_session", { conversationId: conversation, runtimeId: "nope", sessionRef: "x" })
      assert.isTrue(unknownRuntime.isError)
      assert.include(unknownRuntime.text, "UnknownRuntime")
      const noConversation = await first.call("send_message", { conversationId: "terminal:nobody", text: "hi" })
      assert.include(noConversation.text, "NotFound")
      const badId = await first.call("inspect_session", { conversationId: "   " })
      assert.include(badId.text, "InvalidInput")
      const notAttached = await first.call("inspect_session", { conversationId: "terminal:other" })
      assert.include(notAttached.text, "NotAttached")
      await first.client.close()
      assert.isTrue(fs.existsSync(path.join(attachmentDir, "pynchy.attachments.json")))

      // Second process: the attachment is still there and a new observation lands above the old token.
      const second = await connect(true)
      const again = (await second.call("inspect_session", { conversationId: conversation })).value
      assert.isTrue(again.applied)
      assert.isAbove(again.token, inspected.token + 1)
      assert.strictEqual(again.attachment.sessionId, "work")
      await second.client.close()

      // Third process, no runtime module: the attachment reads back as unknown_runtime, not an error.
      const third = await connect(false)
      assert.deepStrictEqual((await third.call("list_runtimes")).value, [])
      const unknown = await third.call("inspect_session", { conversationId: conversation })
      assert.isFalse(unknown.isError, unknown.text)
      assert.deepStrictEqual([unknown.value.status.state, unknown.value.status.error.code], ["unavailable", "unknown_runtime"])
      const detached = (await third.call("detach_session", { conversationId: conversation })).value
      assert.strictEqual(detached.attachment.state, "detached")
      const history = (await third.call("attachment_history", { conversationId: conversation })).value
      assert.deepStrictEqual(history.map((r: { state: string }) => r.state), ["detached"])
      await third.client.close()
      assert.isTrue(tmux.hasSession("work"))
    }), 180_000)
})

describe("pynchy mcp with a ClawConnect runtime module (CLAWCONNECT_AGENT_SESSION_RUNTIME_MODULES)", () => {
  const home = tempDir("pynchy-mcp-cc-")
  const dataDir = path.join(home, "data")
  const sessionsFile = path.join(home, "sessions.json")
  beforeAll(async () => {
    fs.mkdirSync(dataDir, { recursive: true })
    await seedDatabase(dataDir)
    fs.writeFileSync(sessionsFile, JSON.stringify({
      finished: { state: "completed", alive: false, finalResponse: "all done: 42", lastEventAt: "2026-12-01T10:00:00.000Z" },
      asking: { state: "needs_input", alive: true, latestResponse: "Which branch?" },
      odd: { state: "hibernating" },
      working: { alive: true }
    }))
  })

  it.live("completed shows its final response, needs_input is needs_input, null is session_not_found, an unknown state is unknown, continue hands { prompt }", () =>
    Effect.promise(async () => {
      const env: Record<string, string> = {
        ...cleanEnv(),
        PYNCHY_DATA_DIR: dataDir,
        PYNCHY_ATTACHMENT_STORE_DIR: path.join(home, "attachments"),
        CLAWCONNECT_AGENT_SESSION_RUNTIME_MODULES: path.resolve(import.meta.dirname, "fixtures/clawconnect-runtime.mjs"),
        CLAWCONNECT_FIXTURE_SESSIONS: sessionsFile
      }
      const client = new Client({ name: "pynchy-test", version: "1.0.0" })
      await client.connect(new StdioClientTransport({ ...SERVER, cwd: home, env, stderr: "ignore" }))
      const call = async (name: string, args: Record<string, unknown> = {}) => {
        const result = await client.callTool({ name, arguments: args })
        const text = (result.content as Array<{ type: string; text: string }>)[0]!.text
        assert.isFalse(result.isError === true, text)
        return JSON.parse(text)
      }
      const statusOf = async (sessionId: string) => {
        await call("attach_session", { conversationId: conversation, runtimeId: "fixture-runtime", sessionId })
        return (await call("inspect_session", { conversationId: conversation })).status
      }
      try {
        assert.deepStrictEqual((await call("list_runtimes")).map((r: { id: string }) => r.id), ["fixture-runtime"])
        const finished = await statusOf("finished")
        assert.deepStrictEqual([finished.state, finished.finalResponse, finished.lastEventAt], ["completed", "all done: 42", Date.parse("2026-12-01T10:00:00.000Z")])
        const asking = await statusOf("asking")
        assert.deepStrictEqual([asking.state, asking.latestResponse, asking.finalResponse], ["needs_input", "Which branch?", undefined])
        const gone = await statusOf("not-there")
        assert.deepStrictEqual([gone.state, gone.error.code], ["unavailable", "session_not_found"])
        assert.strictEqual((await statusOf("odd")).state, "unknown")
        assert.deepStrictEqual([(await statusOf("working")).state, (await statusOf("working")).alive], ["unknown", true])
        // The earlier name of the field still attaches.
        const aliased = await call("attach_session", { conversationId: conversation, runtimeId: "fixture-runtime", sessionRef: "finished" })
        assert.strictEqual(aliased.attachment.sessionId, "finished")
        const continued = await call("continue_session", { conversationId: conversation, prompt: "carry on please" })
        assert.strictEqual(continued.state, "completed")
        const requests = fs.readFileSync(`${sessionsFile}.requests.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l))
        assert.deepStrictEqual(requests, [{ sessionId: "finished", request: { prompt: "carry on please" } }])
      } finally {
        await client.close()
      }
    }), 120_000)
})
