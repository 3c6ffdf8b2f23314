/**
 * Files through Discord, with the real discord.js against the project's fake gateway, REST API and
 * CDN (test/support/discord.ts): an attachment a user sends is downloaded into the workspace inbox
 * and named to the agent; one past `files:` by what Discord says of it, or not on the CDN, is never
 * downloaded and is named as refused, as is one whose download fails or runs past the cap; the
 * files the agent leaves in its outbox arrive as attachments (multipart uploads) after the reply's
 * text, byte for byte, and a file part left `sending` goes again under its nonce without a
 * second attachment.
 *
 * The test host loads undici 7 (through @effect/platform-node) before discord.js, so its Agent is
 * the global dispatcher discord.js's REST sends through, as in the real host: the uploads here
 * cover the case that broke discord.js's own FormData `files` (see DiscordApi.ts, multipartOf).
 */
import { assert, describe, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { download } from "../../src/channels/discord/DiscordApi.js"
import { makeDiscordRuntime, nonceOf } from "../../src/channels/discord/DiscordRuntime.js"
import { decodeDiscordSettings } from "../../src/channels/discord/settings.js"
import { fileKey } from "../../src/channels/parts.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { tempDir } from "../support/db.js"
import { type FakeDiscord, startDiscord } from "../support/discord.js"
import { eventually } from "../support/eventually.js"
import { filesConfig, recordingAgent } from "../files/support.js"

let dc: FakeDiscord
beforeAll(async () => {
  dc = await startDiscord()
})
afterAll(() => dc.stop())

let channels = 600_000_000_000_000_000n
const nextChannel = () => String(++channels)
const ada = { id: "800000000000000001", username: "ada" }
const text = (s: string) => new TextEncoder().encode(s)

const withHost = (act: (text: string) => void = () => {}) =>
  Effect.gen(function* () {
    const dir = tempDir()
    const cfg = filesConfig(dir, { maxBytes: 1_000, maxFiles: 3 }, { routes: [{ connection: "dc", place: "*", workspace: "main" }], limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 } })
    fs.writeFileSync(path.join(dir, "dc.token"), dc.token + "\n", { mode: 0o600 })
    const settings = decodeDiscordSettings("dc", { kind: "discord", tokenFile: "dc.token", apiRoot: dc.apiRoot, fileOrigins: [dc.cdnOrigin] })
    const runtime = makeDiscordRuntime({ name: "dc", settings, dataDir: dir, files: cfg.files })
    const agent = recordingAgent(act)
    const ctx = yield* Layer.build(makeTestHost(cfg, { executor: agent.layer, runtimes: [{ plugin: "discord", value: runtime }] }))
    return { ctx, agent, workspace: path.join(dir, "workspaces", "main") }
  })

describe("Discord files", () => {
  it.scopedLive("an attachment in lands in the inbox and is named to the agent; the outbox goes out as attachments after the text, byte for byte", () =>
    Effect.gen(function* () {
      // Every byte value, so a text or base64 mangling anywhere on the way out shows.
      const chart = Uint8Array.from({ length: 512 }, (_, i) => i % 256)
      const { agent, workspace } = yield* withHost((said) => {
        if (!said.startsWith("make")) return
        const outbox = path.join(workspace, "outbox")
        fs.mkdirSync(outbox, { recursive: true })
        fs.writeFileSync(path.join(outbox, "answer.txt"), "forty-two")
        fs.writeFileSync(path.join(outbox, "chart.png"), chart)
      })
      const dm = nextChannel()
      const before = dc.downloads().length
      const said = dc.say({ channelId: dm, author: ada, content: "make an answer", attachments: [{ filename: "question.txt", contentType: "text/plain", bytes: text("the question") }] })
      const input = yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      assert.match(input, /^make an answer\n/)
      const found = /\[file: (\/workspace\/inbox\/\S+question\.txt) \(text\/plain, 12 bytes\)\]/.exec(input)
      assert.isNotNull(found, input)
      assert.strictEqual(fs.readFileSync(path.join(workspace, found![1]!.slice("/workspace/".length)), "utf8"), "the question")
      assert.deepStrictEqual(dc.downloads().slice(before), [said.attachments[0]!.id])

      const sent = yield* eventually(Effect.sync(() => (dc.sentFiles(dm).length >= 2 ? dc.sentFiles(dm) : undefined)), { label: "the files sent" })
      const byName = new Map(sent.map((f) => [f.name, f]))
      assert.deepStrictEqual([...byName.keys()].sort(), ["answer.txt", "chart.png"])
      assert.strictEqual(new TextDecoder().decode(byName.get("answer.txt")!.bytes), "forty-two")
      assert.deepStrictEqual([...byName.get("chart.png")!.bytes], [...chart])
      assert.strictEqual(byName.get("chart.png")!.contentType, "image/png")
      // The text first, then one message per file, each under its own nonce.
      const posted = dc.sentRaw(dm)
      assert.match(posted[0]!.content, /^saw: make an answer\n\[file: /)
      assert.strictEqual(posted.length, 3)
      assert.deepStrictEqual(posted.slice(1).map((m) => m.attachments.length), [1, 1])
      assert.strictEqual(new Set(posted.map((m) => m.nonce)).size, 3)
    }))

  it.scopedLive("attachments past `files:` by their description, or not on the CDN, are never downloaded and are named to the agent; the message is stored", () =>
    Effect.gen(function* () {
      const { ctx, agent } = yield* withHost()
      const dm = nextChannel()
      const before = dc.downloads().length
      const foreign = `${dc.cdnOrigin.replace("127.0.0.1", "localhost")}/attachments/${dm}/1/elsewhere.txt`
      const said = dc.say({
        channelId: dm,
        author: ada,
        content: "",
        attachments: [
          { filename: "big.png", contentType: "image/png", bytes: new Uint8Array(5_000) },
          { filename: "archive.zip", contentType: "application/zip", bytes: new Uint8Array(10) },
          { filename: "elsewhere.txt", contentType: "text/plain", bytes: text("off the CDN"), url: foreign },
          { filename: "kept.txt", contentType: "text/plain", bytes: text("kept") }
        ]
      })
      const input = yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      assert.include(input, "[file not received: big.png: too large (5000 bytes; the limit is 1000)]")
      assert.include(input, "[file not received: archive.zip: type not allowed (application/zip)]")
      assert.include(input, `[file not received: elsewhere.txt: not downloaded: its URL is not on Discord's CDN (${new URL(foreign).origin})]`)
      assert.match(input, /\[file: \/workspace\/inbox\/\S+kept\.txt \(text\/plain, 4 bytes\)\]/)
      // Only the one within `files:` was fetched.
      assert.deepStrictEqual(dc.downloads().slice(before), [said.attachments[3]!.id])
      const store = yield* Effect.provide(MessageStore, ctx)
      const [stored] = (yield* store.recent(`dc:${dm}` as never, 10)).filter((m) => m.direction === "in")
      assert.strictEqual(stored!.metadata["messageId"], said.id)
      assert.strictEqual((stored!.metadata["filesRefused"] as ReadonlyArray<unknown>).length, 3)
    }))

  it.scopedLive("a download past the cap (the size was misstated) stops and is refused; a failed one is named; past maxFiles nothing is fetched", () =>
    Effect.gen(function* () {
      const { agent } = yield* withHost()
      const dm = nextChannel()
      const before = dc.downloads().length
      dc.say({
        channelId: dm,
        author: ada,
        content: "three more",
        attachments: [
          { filename: "liar.txt", contentType: "text/plain", bytes: new Uint8Array(50_000).fill(65), size: 10 },
          { filename: "gone.txt", contentType: "text/plain", bytes: text("x"), url: `${dc.cdnOrigin}/attachments/${dm}/42/gone.txt` },
          { filename: "one.txt", contentType: "text/plain", bytes: text("1") },
          { filename: "two.txt", contentType: "text/plain", bytes: text("2") },
          { filename: "three.txt", contentType: "text/plain", bytes: text("3") },
          { filename: "four.txt", contentType: "text/plain", bytes: text("4") }
        ]
      })
      const input = yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      assert.include(input, "[file not received: liar.txt: too large (the limit is 1000 bytes)]")
      assert.include(input, "[file not received: gone.txt: could not be downloaded from Discord (404)]")
      for (const n of ["one", "two", "three"]) assert.match(input, new RegExp(`\\[file: /workspace/inbox/\\S+${n}\\.txt \\(text/plain, 1 bytes\\)\\]`))
      assert.include(input, "[file not received: four.txt: too many files (the limit is 3)]")
      // liar, one, two, three: four was never fetched (gone's URL names no stored file).
      assert.strictEqual(dc.downloads().length - before, 4)
    }))
})

describe("Discord file parts after a crash", () => {
  it.scopedLive("a file part left `sending` within the nonce window goes again under the same nonce: Discord returns the first, no second attachment", () =>
    Effect.gen(function* () {
      const { ctx } = yield* withHost()
      const channel = (yield* Effect.provide(Channels, ctx)).get("dc")!
      const sql = yield* Effect.provide(SqlClient.SqlClient, ctx)
      const dm = nextChannel()
      const file = { n: 1, name: "report.pdf", mimeType: "application/pdf", bytes: text("%PDF-1.4 tiny") }
      const delivery = { idempotencyKey: "crash-f", conversationId: `dc:${dm}`, connection: "dc", place: dm, kind: "reply" as const, text: "here it is", previousAttempts: 0, files: [file] }
      yield* channel.send(delivery)
      assert.strictEqual(dc.sentFiles(dm).length, 1)
      assert.strictEqual(dc.sentFiles(dm)[0]!.nonce, nonceOf(fileKey("crash-f", 1)))
      const posts = dc.counts().posts

      // As if the host died after the upload reached Discord and before it recorded the part sent.
      yield* sql`UPDATE delivery_parts SET status = 'sending' WHERE part_key = ${fileKey("crash-f", 1)}`
      yield* channel.send({ ...delivery, previousAttempts: 1 })
      assert.strictEqual(dc.counts().posts, posts + 1)
      assert.strictEqual(dc.sentFiles(dm).length, 1)
      assert.deepStrictEqual(dc.sent(dm), ["here it is", ""])

      // Claimed longer ago than the window: not sent again (the text part, sent, is skipped too),
      // and the delivery's outcome is unknown (the user is told).
      yield* sql`UPDATE delivery_parts SET status = 'sending', updated_at = 0 WHERE part_key = ${fileKey("crash-f", 1)}`
      const unknown = yield* Effect.flip(channel.send({ ...delivery, previousAttempts: 2 }))
      assert.isTrue(unknown.outcomeUnknown)
      assert.strictEqual(dc.counts().posts, posts + 1)
      assert.strictEqual(dc.sentFiles(dm).length, 1)
    }))
})

describe("The attachment download", () => {
  it.scopedLive("ends `download_timeout` when the CDN does not answer in time, `too_large` by the declared length without reading, and refuses redirects", () =>
    Effect.gen(function* () {
      const held: Array<http.ServerResponse> = []
      const server = http.createServer((req, res) => {
        if (req.url === "/silent") return void held.push(res)
        if (req.url === "/long") {
          res.writeHead(200, { "content-type": "text/plain", "content-length": "5000" })
          return void res.write("x")
        }
        res.writeHead(302, { location: "http://example.invalid/file" })
        res.end()
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => {
          server.closeAllConnections()
          server.close()
        })
      )
      const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const codeOf = (url: string) => download(url, 1_000, "300 millis").pipe(Effect.flip, Effect.map((e) => e.code))
      assert.strictEqual(yield* codeOf(`${root}/silent`), "download_timeout")
      assert.strictEqual(yield* codeOf(`${root}/long`), "too_large")
      assert.strictEqual(yield* codeOf(`${root}/moved`), "download_failed")
    }))
})
