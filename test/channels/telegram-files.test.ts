/**
 * Files through Telegram, against the emulator front of test/support/telegram.ts. telegram-test-api
 * 4.2.1 has no getFile, file URL or sendDocument: the front answers those few calls as the Bot API
 * documents them (everything else is the emulator's). A document a user sends is downloaded into
 * the workspace inbox and named to the agent; one over `files:` is not downloaded and is named as
 * refused; the files the agent leaves in its outbox arrive as documents after the reply's text.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { decodeTelegramSettings } from "../../src/channels/telegram/settings.js"
import { makeTelegramRuntime } from "../../src/channels/telegram/TelegramRuntime.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { startTelegram, type Telegram } from "../support/telegram.js"
import { filesConfig, recordingAgent } from "../files/support.js"

let tg: Telegram
beforeAll(async () => {
  tg = await startTelegram()
})
afterAll(() => tg.stop())

const withHost = (act: (text: string) => void) =>
  Effect.gen(function* () {
    const dir = tempDir()
    const cfg = filesConfig(dir, { maxBytes: 1_000 }, { routes: [{ connection: "tg", place: "*", workspace: "main" }], limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 } })
    fs.writeFileSync(path.join(dir, "tg.token"), tg.token + "\n", { mode: 0o600 })
    const settings = decodeTelegramSettings("tg", { kind: "telegram", tokenFile: "tg.token", apiRoot: tg.apiRoot, pollTimeoutSeconds: 1, maxBackoffMs: 200 })
    const runtime = makeTelegramRuntime({ name: "tg", settings, dataDir: dir, files: cfg.files })
    const agent = recordingAgent(act)
    yield* Layer.build(makeTestHost(cfg, { executor: agent.layer, runtimes: [{ plugin: "telegram", value: runtime }] }))
    return { agent, workspace: path.join(dir, "workspaces", "main") }
  })

const fileMessage = (chatId: number, messageId: number, message: Record<string, unknown>) => ({
  message: { message_id: messageId, date: 1, chat: { id: chatId, type: "private" }, from: { id: chatId, is_bot: false, username: `user${chatId}` }, ...message }
})

describe("Telegram files", () => {
  it.scopedLive("a document in lands in the inbox and is named to the agent; the outbox goes out as documents after the text", () =>
    Effect.gen(function* () {
      const { agent, workspace } = yield* withHost((text) => {
        if (!text.startsWith("make")) return
        const outbox = path.join(workspace, "outbox")
        fs.mkdirSync(outbox, { recursive: true })
        fs.writeFileSync(path.join(outbox, "answer.txt"), "forty-two")
      })
      const chatId = 501
      const fileId = tg.addFile(new TextEncoder().encode("the question"))
      tg.inject(fileMessage(chatId, 1, { caption: "make an answer", document: { file_id: fileId, file_unique_id: fileId, file_name: "question.txt", mime_type: "text/plain", file_size: 12 } }))
      const input = yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      assert.match(input, /^make an answer\n/)
      const found = /\[file: (\/workspace\/inbox\/\S+question\.txt) \(text\/plain, 12 bytes\)\]/.exec(input)
      assert.isNotNull(found, input)
      assert.strictEqual(fs.readFileSync(path.join(workspace, found![1]!.slice("/workspace/".length)), "utf8"), "the question")
      const [doc] = yield* eventually(Effect.sync(() => (tg.documents(chatId).length > 0 ? tg.documents(chatId) : undefined)), { label: "the document sent" })
      assert.strictEqual(doc!.name, "answer.txt")
      assert.strictEqual(new TextDecoder().decode(doc!.bytes), "forty-two")
      assert.isTrue(tg.sent(chatId).some((t) => t.startsWith("saw: make an answer")))
    }))

  it.scopedLive("a photo over the limit is not downloaded and the agent is told why; a photo within it arrives as a JPEG", () =>
    Effect.gen(function* () {
      const { agent } = yield* withHost(() => {})
      const chatId = 502
      const big = tg.addFile(new Uint8Array(5_000))
      tg.inject(fileMessage(chatId, 1, { caption: "big one", photo: [{ file_id: big, file_unique_id: big, width: 90, height: 90, file_size: 5_000 }] }))
      const input = yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      assert.include(input, "[file not received: photo-1.jpg: too large")
      assert.notInclude(tg.downloads(), "documents/" + big + ".bin")
      const small = tg.addFile(new Uint8Array([0xff, 0xd8, 0xff]))
      tg.inject(fileMessage(chatId, 2, { photo: [{ file_id: small, file_unique_id: small, width: 9, height: 9 }] }))
      const second = yield* eventually(Effect.sync(() => agent.inputs[1]), { label: "the second input" })
      assert.match(second, /\[file: \/workspace\/inbox\/\S+photo-2\.jpg \(image\/jpeg, 3 bytes\)\]/)
    }))
})
