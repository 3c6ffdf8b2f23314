/**
 * Files in, through the plugin contract (`ingestMessage` with `files`) on a test host with SQLite:
 * an accepted file is in the workspace inbox before the message commits, the agent's input names
 * its /workspace path, refused files (too large, type not allowed, too many) are named with why,
 * hostile names are made safe, and a bad shape is refused with a typed error naming the field.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConversationId, MessageId } from "../../src/domain/ids.js"
import { safeName } from "../../src/files/names.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { filesConfig, filesRuntime, recordingAgent } from "./support.js"

const bytes = (s: string) => new TextEncoder().encode(s)

const hostWith = (dir: string) =>
  Effect.gen(function* () {
    const runtime = filesRuntime()
    const agent = recordingAgent()
    const ctx = yield* Layer.build(makeTestHost(filesConfig(dir), { runtimes: [runtime.entry], executor: agent.layer }))
    return { ctx, runtime, agent, workspace: path.join(dir, "workspaces", "main") }
  })

describe("files in", () => {
  it.scopedLive("an accepted file is in the inbox and the agent reads its /workspace path; refused ones are named with why", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const { agent, ctx, runtime, workspace } = yield* hostWith(dir)
      const result = yield* Effect.promise(() => runtime.context().ingestMessage({
        connection: "files",
        place: "chat-1",
        providerEventId: "e1",
        sender: "ann",
        text: "here you go",
        files: [
          { name: "notes.txt", mimeType: "text/plain", bytes: bytes("hello inbox") },
          { name: "big.pdf", mimeType: "application/pdf", bytes: new Uint8Array(1_001) },
          { name: "tool.exe", mimeType: "application/x-msdownload", bytes: bytes("MZ") },
          { name: "b.png", bytes: bytes("png") },
          { name: "c.png", bytes: bytes("png") },
          { name: "d.png", bytes: bytes("png") }
        ]
      }))
      const message = yield* Effect.provide(MessageStore, ctx).pipe(Effect.flatMap((s) => s.byIds([MessageId.make(result.messageId)])))
      const meta = message[0]!.metadata as { files: Array<{ path: string; name: string; type: string; size: number }>; filesRefused: Array<{ name: string; reason: string }> }
      assert.deepStrictEqual(meta.files.map((f) => [f.name, f.type, f.size]), [["notes.txt", "text/plain", 11], ["b.png", "image/png", 3], ["c.png", "image/png", 3]])
      assert.deepStrictEqual(meta.filesRefused.map((f) => f.name), ["big.pdf", "tool.exe", "d.png"])
      assert.match(meta.filesRefused[0]!.reason, /too large/)
      assert.match(meta.filesRefused[1]!.reason, /type not allowed \(application\/x-msdownload\)/)
      assert.match(meta.filesRefused[2]!.reason, /too many files \(the limit is 3\)/)
      // On disk in the workspace's inbox, under the path the agent sees at /workspace.
      const notes = meta.files[0]!
      assert.match(notes.path, /^\/workspace\/inbox\/[^/]+\/[0-9a-f]{10}-1-notes\.txt$/)
      assert.strictEqual(fs.readFileSync(path.join(workspace, notes.path.slice("/workspace/".length)), "utf8"), "hello inbox")
      // The agent's turn names the path, its type and size, and each refused file with why.
      const input = yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      assert.include(input, `[file: ${notes.path} (text/plain, 11 bytes)]`)
      assert.include(input, "[file not received: big.pdf: too large")
      assert.include(input, "[file not received: tool.exe: type not allowed")
      // A redelivery of the same event writes the same name and stores nothing new.
      const again = yield* Effect.promise(() => runtime.context().ingestMessage({
        connection: "files", place: "chat-1", providerEventId: "e1", sender: "ann", text: "here you go",
        files: [{ name: "notes.txt", mimeType: "text/plain", bytes: bytes("hello inbox") }]
      }))
      assert.isTrue(again.duplicate)
      assert.deepStrictEqual(fs.readdirSync(path.dirname(path.join(workspace, notes.path.slice("/workspace/".length)))).sort(), meta.files.map((f) => path.basename(f.path)).sort())
    }))

  it.scopedLive("hostile names are made safe: no separators, no leading dot, capped length; the file stays in the inbox", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const { ctx, runtime, workspace } = yield* hostWith(dir)
      const long = `${"a".repeat(300)}.txt`
      const result = yield* Effect.promise(() => runtime.context().ingestMessage({
        connection: "files", place: "../../etc", providerEventId: "e2", sender: "mallory", text: "x",
        files: [{ name: "../../etc/x", mimeType: "text/plain", bytes: bytes("1") }, { name: ".bashrc", mimeType: "text/plain", bytes: bytes("2") }, { name: long, bytes: bytes("3") }]
      }))
      const [message] = yield* Effect.provide(MessageStore, ctx).pipe(Effect.flatMap((s) => s.byIds([MessageId.make(result.messageId)])))
      const files = (message!.metadata as { files: Array<{ path: string; name: string }> }).files
      assert.strictEqual(files.length, 3)
      for (const f of files) {
        const rel = f.path.slice("/workspace/".length)
        const segments = rel.split("/")
        assert.strictEqual(segments.length, 3, f.path)
        assert.strictEqual(segments[0], "inbox")
        for (const s of segments) {
          assert.notStrictEqual(s[0], ".", f.path)
          assert.isAtMost(s.length, 80)
        }
        assert.isTrue(fs.statSync(path.join(workspace, rel)).isFile())
      }
      assert.deepStrictEqual(files.map((f) => f.name), [safeName("../../etc/x"), "bashrc", `${"a".repeat(56)}.txt`])
      assert.isFalse(fs.existsSync(path.join(dir, "etc")))
      assert.isFalse(fs.existsSync(path.join(workspace, "..", "etc")))
    }))

  it.scopedLive("an inbox the agent made a link (to a host folder) is not written through; the message is stored", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const { ctx, runtime, workspace } = yield* hostWith(dir)
      const elsewhere = tempDir()
      fs.mkdirSync(workspace, { recursive: true })
      fs.symlinkSync(elsewhere, path.join(workspace, "inbox"))
      const result = yield* Effect.promise(() => runtime.context().ingestMessage({
        connection: "files", place: "p", providerEventId: "e3", sender: "ann", text: "x", files: [{ name: "a.txt", bytes: bytes("a") }]
      }))
      const [message] = yield* Effect.provide(MessageStore, ctx).pipe(Effect.flatMap((s) => s.byIds([MessageId.make(result.messageId)])))
      assert.deepStrictEqual(fs.readdirSync(elsewhere), [])
      assert.match((message!.metadata as { filesRefused: Array<{ reason: string }> }).filesRefused[0]!.reason, /not saved: the inbox inbox is not a folder/)
    }))

  it.scopedLive("a bad shape (bytes not bytes, no name) is refused with an error naming the field", () =>
    Effect.gen(function* () {
      const { ctx, runtime } = yield* hostWith(tempDir())
      const failed = yield* Effect.promise(() => runtime.context().ingestMessage({
        connection: "files", place: "p", providerEventId: "e4", sender: "ann", text: "x",
        files: [{ name: "", bytes: "aGk=" as unknown as Uint8Array }]
      }).then(() => undefined, (e: unknown) => e as Error))
      assert.isDefined(failed)
      // The Promise contract rejects with the typed error's message: the payload and each bad field.
      assert.match(failed!.message, /ingest payload/)
      assert.match(failed!.message, /files.*0.*name/s)
      assert.match(failed!.message, /files.*0.*bytes/s)
      const stored = yield* Effect.provide(MessageStore, ctx).pipe(Effect.flatMap((s) => s.conversation(ConversationId.make("files:p"))))
      assert.isTrue(stored._tag === "None")
    }))
})
