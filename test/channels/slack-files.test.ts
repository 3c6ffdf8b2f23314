/**
 * Files through Slack, through real @slack/bolt against the fake Slack (test/support/slack.ts): a
 * file a user shares is downloaded from the file host with the bot token into the workspace inbox
 * and named to the agent; files over `files:` (size, type) or on a foreign host are refused from
 * the event alone, without a request; a file the event understated is cut off at the cap; the
 * agent's outbox goes out through the external upload flow into the same channel and thread, byte
 * for byte; an upload Slack refused is sent again by the resend, and one whose outcome is unknown
 * never is.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, TestClock } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { fileKey } from "../../src/channels/parts.js"
import { downloadFile, fileOrigins, planDownloads } from "../../src/channels/slack/files.js"
import { decodeSlackSettings } from "../../src/channels/slack/settings.js"
import { makeSlackRuntime } from "../../src/channels/slack/SlackRuntime.js"
import { FilesConfig } from "../../src/config/files.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { type FakeSlack, startFakeSlack } from "../support/slack.js"
import { filesConfig, recordingAgent } from "../files/support.js"

let slack: FakeSlack
/** Another origin than Slack's: it records every request and whether it carried the bot token. */
let foreign: http.Server
const foreignHits: Array<{ readonly authorization: string | undefined }> = []
beforeAll(async () => {
  slack = await startFakeSlack()
  process.env["PYNCHY_TEST_SLACK_FILES_BOT"] = slack.botToken
  process.env["PYNCHY_TEST_SLACK_FILES_APP"] = slack.appToken
  foreign = http.createServer((req, res) => {
    foreignHits.push({ authorization: req.headers.authorization })
    res.writeHead(200, { "content-type": "text/plain" }).end("not slack")
  })
  await new Promise<void>((resolve) => foreign.listen(0, "127.0.0.1", () => resolve()))
})
afterAll(async () => {
  await slack.stop()
  await new Promise<void>((resolve) => foreign.close(() => resolve()))
})

let channels = 500
const nextChannel = (prefix = "D") => `${prefix}${++channels}`
const bytesOf = (text: string) => new TextEncoder().encode(text)

const withHost = (act: (text: string) => void) =>
  Effect.gen(function* () {
    const dir = tempDir()
    const cfg = filesConfig(dir, { maxBytes: 1_000, maxFiles: 3 }, { routes: [{ connection: "sl", place: "*", workspace: "main" }], limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 } })
    const settings = decodeSlackSettings("sl", { kind: "slack", botTokenEnv: "PYNCHY_TEST_SLACK_FILES_BOT", appTokenEnv: "PYNCHY_TEST_SLACK_FILES_APP", apiUrl: slack.apiUrl, maxBackoffMs: 200 })
    const runtime = makeSlackRuntime({ name: "sl", settings, files: cfg.files })
    const agent = recordingAgent(act)
    const ctx = yield* Layer.build(makeTestHost(cfg, { executor: agent.layer, runtimes: [{ plugin: "slack", value: runtime }] }))
    return { agent, ctx, workspace: path.join(dir, "workspaces", "main") }
  })

const inputAt = (agent: { readonly inputs: ReadonlyArray<string> }, i: number) => eventually(Effect.sync(() => agent.inputs[i]), { label: `the agent's input ${i}` })

describe("Slack files", () => {
  it.scopedLive("a file shared in a thread lands in the inbox and is named to the agent; the outbox goes up into the same thread, byte for byte, with the reply", () =>
    Effect.gen(function* () {
      const { agent, workspace } = yield* withHost((text) => {
        if (!text.startsWith("make")) return
        const outbox = path.join(workspace, "outbox")
        fs.mkdirSync(outbox, { recursive: true })
        fs.writeFileSync(path.join(outbox, "answer.txt"), "forty-two\n")
        fs.writeFileSync(path.join(outbox, "chart.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]))
      })
      const dm = nextChannel()
      const thread = "1800000000.000001"
      slack.say({ channel: dm, text: "make an answer", threadTs: thread, files: [{ name: "question.txt", mimetype: "text/plain", bytes: bytesOf("the question") }] })
      const input = yield* inputAt(agent, 0)
      assert.match(input, /^make an answer\n/)
      const found = /\[file: (\/workspace\/inbox\/\S+question\.txt) \(text\/plain, 12 bytes\)\]/.exec(input)
      assert.isNotNull(found, input)
      assert.include(found![1]!, `/workspace/inbox/sl_${dm}_${thread}-`)
      assert.strictEqual(fs.readFileSync(path.join(workspace, found![1]!.slice("/workspace/".length)), "utf8"), "the question")
      // Downloaded once, with the bot token.
      assert.deepStrictEqual(slack.downloads().filter((d) => d.path.endsWith("/question.txt")).map((d) => d.authorized), [true])

      const uploads = yield* eventually(() => (slack.uploads(dm).length === 2 ? slack.uploads(dm) : undefined), { label: "the two uploads" })
      assert.deepStrictEqual(uploads.map((u) => [u.filename, u.title, u.threadTs]), [["answer.txt", "answer.txt", thread], ["chart.png", "chart.png", thread]])
      assert.strictEqual(new TextDecoder().decode(uploads[0]!.bytes), "forty-two\n")
      assert.deepStrictEqual([...uploads[1]!.bytes], [0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255])
      // The reply's text went into the thread too, before the files.
      const replies = slack.posted(dm, thread)
      assert.strictEqual(replies.length, 1)
      assert.match(replies[0]!.text, /^saw: make an answer/)
    }))

  it.scopedLive("files over the size limit, of a type not allowed or on a foreign host are refused from the event without a request; one the event understated is cut off at the cap; the message is stored", () =>
    Effect.gen(function* () {
      const { agent } = yield* withHost(() => {})
      const dm = nextChannel()
      const foreignUrl = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}/files-pri/T0001-F1/download/elsewhere.txt`
      slack.say({
        channel: dm,
        text: "four files",
        files: [
          { name: "big.png", mimetype: "image/png", bytes: new Uint8Array(5_000) },
          { name: "run.exe", mimetype: "application/x-msdownload", bytes: new Uint8Array(10) },
          { name: "elsewhere.txt", mimetype: "text/plain", size: 10, url: foreignUrl },
          { name: "liar.txt", mimetype: "text/plain", bytes: new Uint8Array(50_000).fill(97), size: 20 }
        ]
      })
      slack.say({
        channel: dm,
        text: "more",
        files: [
          { name: "moved.txt", mimetype: "text/plain", size: 10, redirectTo: foreignUrl },
          { name: "a.txt", mimetype: "text/plain", bytes: bytesOf("a") },
          { name: "b.txt", mimetype: "text/plain", bytes: bytesOf("b") },
          { name: "c.txt", mimetype: "text/plain", bytes: bytesOf("c") }
        ]
      })
      const input = yield* inputAt(agent, 0)
      assert.include(input, "[file not received: big.png: too large (5000 bytes; the limit is 1000)]")
      assert.include(input, "[file not received: run.exe: type not allowed (application/x-msdownload)]")
      assert.include(input, "[file not received: elsewhere.txt: its URL is not on Slack's file host (not requested)]")
      assert.include(input, "[file not received: liar.txt: too large (the limit is 1000 bytes)]")
      assert.notInclude(input, "[file: ")
      // Only the understated one was requested (and cut off); the foreign host never heard from us.
      assert.deepStrictEqual(slack.downloads().filter((d) => /\/(big\.png|run\.exe|liar\.txt)$/.test(d.path)).map((d) => d.path.split("/").pop()), ["liar.txt"])
      // A redirect (Slack's answer to a token without files:read) is not followed; past maxFiles nothing is requested.
      const more = yield* inputAt(agent, 1)
      assert.include(more, "[file not received: moved.txt: Slack redirected the download (is the app's files:read scope granted?)]")
      assert.match(more, /\[file: \/workspace\/inbox\/\S+a\.txt \(text\/plain, 1 bytes\)\]\n\[file: \S+b\.txt/)
      assert.include(more, "[file not received: c.txt: too many files (the limit is 3)]")
      assert.isFalse(slack.downloads().some((d) => d.path.endsWith("/c.txt")))
      assert.deepStrictEqual(foreignHits, [])

      // A file-only message (no text) is taken too.
      slack.say({ channel: dm, text: "", files: [{ name: "note.md", mimetype: "text/markdown", bytes: bytesOf("# hi") }] })
      const second = yield* inputAt(agent, 2)
      assert.match(second, /^\n?\[file: \/workspace\/inbox\/\S+note\.md \(text\/markdown, 4 bytes\)\]/)
    }))

  it.scopedLive("a file shared while the host could not hear it is fetched by catch-up from the history", () =>
    Effect.gen(function* () {
      const { agent, workspace } = yield* withHost(() => {})
      const dm = nextChannel()
      slack.say({ channel: dm, text: "first" })
      yield* inputAt(agent, 0)
      yield* Effect.promise(() => slack.down())
      slack.say({ channel: dm, text: "while you were out", files: [{ name: "missed.txt", mimetype: "text/plain", bytes: bytesOf("missed it") }], lost: true })
      yield* Effect.promise(() => slack.up())
      const input = yield* inputAt(agent, 1)
      const found = /\[file: (\/workspace\/inbox\/\S+missed\.txt) \(text\/plain, 9 bytes\)\]/.exec(input)
      assert.isNotNull(found, input)
      assert.strictEqual(fs.readFileSync(path.join(workspace, found![1]!.slice("/workspace/".length)), "utf8"), "missed it")
    }))

  it.scopedLive("an upload Slack refused fails the delivery and goes on the resend, once; a file part left `sending` by a crash is never uploaded again and the outcome is unknown", () =>
    Effect.gen(function* () {
      const { ctx } = yield* withHost(() => {})
      const channel = (yield* Effect.provide(Channels, ctx)).get("sl")!
      assert.isTrue(channel.files)
      const parts = yield* Effect.provide(DeliveryStore, ctx)
      const room = nextChannel("C")
      const file = { n: 1, name: "report.pdf", mimeType: "application/pdf", bytes: bytesOf("%PDF-1.4 fake") }
      const delivery = { idempotencyKey: "files-1", conversationId: `sl:${room}`, connection: "sl", place: room, kind: "reply" as const, text: "here it is", previousAttempts: 0, files: [file] }

      // Sharing is refused (a 429 longer than a send waits): the text is out, the file is not, and
      // the delivery fails for it, so the outbox sends it again (only the file goes).
      slack.rateLimitNext("files.completeUploadExternal", 1, 60)
      const refused = yield* Effect.flip(channel.send(delivery))
      assert.include(refused.reason, "file 1")
      assert.strictEqual(slack.posted(room).length, 1)
      assert.strictEqual(slack.uploads(room).length, 0)
      assert.strictEqual(yield* parts.partClaimedAt(fileKey("files-1", 1)), null)
      yield* channel.send({ ...delivery, previousAttempts: 1 })
      assert.strictEqual(slack.posted(room).length, 1)
      assert.deepStrictEqual(slack.uploads(room).map((u) => [u.filename, new TextDecoder().decode(u.bytes), u.threadTs]), [["report.pdf", "%PDF-1.4 fake", undefined]])
      yield* channel.send({ ...delivery, previousAttempts: 2 })
      assert.strictEqual(slack.uploads(room).length, 1)

      // Another delivery whose file part a crash left `sending`: its text goes, its file never does,
      // and the delivery's outcome is unknown (the user is told).
      assert.strictEqual(yield* parts.claimPart(fileKey("files-2", 1)), "claimed")
      const calls = slack.calls("files.getUploadURLExternal")
      const unknown = yield* Effect.flip(channel.send({ ...delivery, idempotencyKey: "files-2" }))
      assert.isTrue(unknown.outcomeUnknown)
      assert.strictEqual(slack.posted(room).length, 2)
      assert.strictEqual(slack.uploads(room).length, 1)
      assert.strictEqual(slack.calls("files.getUploadURLExternal"), calls)
    }))
})

describe("Slack files, judged from the event", () => {
  const origins = fileOrigins("http://127.0.0.1:9/api/")
  const limits = FilesConfig.make({ maxBytes: 100, maxFiles: 3 })
  const file = (extra: Record<string, unknown>) => ({ id: "F1", name: "a.txt", mimetype: "text/plain", size: 3, url_private_download: "https://files.slack.com/files-pri/T1-F1/download/a.txt", ...extra })

  it("only files on Slack's file host or the API base's origin are fetched; deleted, external, hidden and malformed entries are refused by themselves", () => {
    assert.deepStrictEqual([...origins], ["https://files.slack.com", "http://127.0.0.1:9"])
    const plan = planDownloads([
      file({}),
      file({ name: "b.txt", url_private_download: "http://127.0.0.1:9/files-pri/T1-F2/download/b.txt" }),
      file({ name: "c.txt", url_private_download: "http://files.slack.com/files-pri/x" }),
      file({ name: "d.txt", url_private_download: "https://files.slack.com.evil.test/x" }),
      file({ name: "e.txt", url_private_download: "not a url" }),
      file({ name: "f.txt", mode: "tombstone" }),
      file({ name: "g.txt", mode: "hidden_by_limit" }),
      file({ name: "h.txt", is_external: true, url_private_download: undefined, url_private: "https://docs.example/x" }),
      file({ name: "i.txt", url_private_download: undefined }),
      { id: 42 },
      file({ name: "j.txt" }),
      file({ name: "k.txt" })
    ], limits, origins)
    assert.deepStrictEqual(plan.fetch.map((f) => f.name), ["a.txt", "b.txt", "j.txt"])
    assert.deepStrictEqual(plan.refused.map((r) => `${r.name}: ${r.reason}`), [
      "c.txt: its URL is not on Slack's file host (not requested)",
      "d.txt: its URL is not on Slack's file host (not requested)",
      "e.txt: its URL is not on Slack's file host (not requested)",
      "f.txt: deleted in Slack",
      "g.txt: hidden by the Slack workspace's plan",
      "h.txt: an external file (not stored in Slack)",
      "i.txt: no download URL",
      "file: malformed file entry",
      "k.txt: too many files (the limit is 3)"
    ])
  })

  it.scoped("a download that does not finish fails at its deadline as file_download_timeout", () =>
    Effect.gen(function* () {
      // A host that takes the request and never answers.
      const server = yield* Effect.acquireRelease(
        Effect.async<http.Server>((resume) => {
          const s = http.createServer(() => {})
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.sync(() => s.closeAllConnections()).pipe(Effect.zipRight(Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))))
      )
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/files-pri/T1-F1/download/slow.txt`
      const fiber = yield* Effect.fork(Effect.flip(downloadFile({ name: "slow.txt", mimeType: "text/plain", url }, "xoxb-t", 100)))
      yield* TestClock.adjust("59 seconds")
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust("1 second")
      const e = yield* Fiber.join(fiber)
      assert.strictEqual(e.reason, "could not be downloaded from Slack (file_download_timeout)")
    }))
})
