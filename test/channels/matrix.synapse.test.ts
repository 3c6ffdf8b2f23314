/**
 * The Matrix connection runtime against a real Synapse (Debian sid root, bwrap, 127.0.0.1):
 * replies in the room, isReady across a homeserver outage, idempotent resends, a kill -9 mid-turn,
 * and catching up from the durable cursor after the host was down.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { makeMatrixRuntime, MESSAGE_LIMIT, SYNC_STREAM, txnIdOf } from "../../src/channels/matrix/MatrixRuntime.js"
import { decodeMatrixSettings } from "../../src/channels/matrix/settings.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConnectionName, ConversationId } from "../../src/domain/ids.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { FilesConfig } from "../../src/config/files.js"
import { type MatrixUser, skipWithoutSynapse, startSynapse, type Synapse } from "../support/synapse.js"
import { streamingExecutor } from "../support/streaming.js"
import { skipWithout } from "../support/system.js"
import { decodedSeconds } from "../speech/support.js"
import { recordingAgent } from "../files/support.js"
import { awaitAllSent, killAllHosts, killHard, query, startHost, stopHost } from "./host-process.js"

const skip = skipWithoutSynapse()

let synapse: Synapse
let alice: MatrixUser
let bot: MatrixUser

beforeAll(async () => {
  if (skip) return
  synapse = await startSynapse()
  alice = await synapse.register("alice")
  bot = await synapse.register("bot", "bot-password")
}, 120_000)

afterAll(() => {
  killAllHosts()
  if (!skip) synapse.stop()
})

const settings = (extra: Record<string, unknown> = {}) =>
  decodeMatrixSettings("mx", { kind: "matrix", homeserver: synapse.baseUrl, userId: bot.userId, password: bot.password, maxBackoffMs: 500, ...extra })

const hostConfig = (dir: string) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "mx", place: "*", workspace: "main" }],
    connections: { mx: { kind: "matrix", homeserver: synapse.baseUrl, userId: bot.userId, password: bot.password } },
    limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 }
  }, "test config"))

/** A room where alice invited the bot; the runtime joins on the invite. */
const roomWithBot = async (who: MatrixUser = bot) => {
  const room = await alice.createRoom([who.userId])
  await Effect.runPromise(eventually(async () => ((await alice.members(room)).includes(who.userId) ? true : undefined), { label: `${who.userId} in the room` }))
  return room
}

const echoesOf = (messages: ReadonlyArray<{ sender: string; body: string }>, text: string, who: MatrixUser = bot) =>
  messages.filter((m) => m.sender === who.userId && m.body === `echo: ${text}`).length

/** Who is typing in a room, as `who` sees it: follows `m.typing` events through incremental syncs. */
const typingWatch = async (who: MatrixUser, room: string) => {
  const filter = JSON.stringify({ presence: { types: [] }, account_data: { types: [] }, room: { rooms: [room], timeline: { limit: 1 }, state: { types: [] }, ephemeral: { types: ["m.typing"] } } })
  const sync = async (since?: string) => {
    const q = new URLSearchParams({ filter, timeout: since ? "1000" : "0", ...(since ? { since } : {}) })
    const res = await fetch(`${who.baseUrl}/_matrix/client/v3/sync?${q}`, { headers: { authorization: `Bearer ${who.accessToken}` } })
    return (await res.json()) as { next_batch: string; rooms?: { join?: Record<string, { ephemeral?: { events?: Array<{ type: string; content: { user_ids?: Array<string> } }> } }> } }
  }
  let since = (await sync()).next_batch
  let typing: Array<string> = []
  /** The typing users after the next sync. */
  return async () => {
    const body = await sync(since)
    since = body.next_batch
    for (const e of body.rooms?.join?.[room]?.ephemeral?.events ?? []) if (e.type === "m.typing") typing = e.content.user_ids ?? []
    return typing
  }
}

interface MediaEvent { readonly sender: string; readonly content: { readonly msgtype: string; readonly body: string; readonly url: string; readonly info?: { readonly mimetype?: string } } }

/** The room's events of these msgtypes that point at an upload (m.audio, m.image, m.file), oldest first. */
const mediaEvents = async (who: MatrixUser, room: string, msgtypes: ReadonlyArray<string> = ["m.audio"]): Promise<Array<MediaEvent>> => {
  const res = await fetch(`${who.baseUrl}/_matrix/client/v3/rooms/${encodeURIComponent(room)}/messages?dir=b&limit=100`, { headers: { authorization: `Bearer ${who.accessToken}` } })
  const body = (await res.json()) as { chunk: Array<{ type: string; sender: string; content: { msgtype?: string; body?: string; url?: string; info?: { mimetype?: string } } }> }
  return body.chunk.filter((e) => e.type === "m.room.message" && msgtypes.includes(e.content.msgtype ?? "") && typeof e.content.url === "string").reverse() as Array<MediaEvent>
}

/** A file of the media repository, as a client downloads it (authenticated media). */
const download = async (who: MatrixUser, mxc: string): Promise<Uint8Array> => {
  const res = await fetch(`${who.baseUrl}/_matrix/client/v1/media/download/${mxc.slice("mxc://".length)}`, { headers: { authorization: `Bearer ${who.accessToken}` } })
  if (!res.ok) throw new Error(`download ${res.status}`)
  return new Uint8Array(await res.arrayBuffer())
}

describe.skipIf(skip)("Matrix runtime against a real Synapse", () => {
  it.scopedLive("the bot is typing in the room while a turn runs and stops when it ends; the reply arrives once", () =>
    Effect.gen(function* () {
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir() })
      yield* Layer.build(makeTestHost(hostConfig(tempDir()), { executor: streamingExecutor({ hold: () => held }), runtimes: [{ plugin: "matrix", value: runtime }] }))
      const room = yield* Effect.promise(() => roomWithBot())
      const typingIn = yield* Effect.promise(() => typingWatch(alice, room))
      yield* Effect.promise(() => alice.send(room, "think first"))
      // The turn is held: the bot shows as typing until it ends.
      yield* eventually(async () => ((await typingIn()).includes(bot.userId) ? true : undefined), { label: "the bot typing" })
      release()
      yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.body === "echo: think first"))
      yield* eventually(async () => ((await typingIn()).length === 0 ? true : undefined), { label: "no one typing" })
      const all = yield* Effect.promise(() => alice.messages(room))
      assert.strictEqual(all.filter((m) => m.body === "echo: think first").length, 1)
    }))

  it.scopedLive("a message in a room gets the agent's reply in the room; the since token is the durable cursor", () =>
    Effect.gen(function* () {
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir() })
      const ctx = yield* Layer.build(makeTestHost(hostConfig(tempDir()), { runtimes: [{ plugin: "matrix", value: runtime }] }))
      assert.isTrue(Effect.runSync(runtime.isReady))
      const room = yield* Effect.promise(() => roomWithBot())
      yield* Effect.promise(() => alice.send(room, "hello"))
      const reply = yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.sender === bot.userId))
      assert.strictEqual(reply.body, "echo: hello")
      assert.isUndefined(reply.formattedBody, "plain text goes without HTML")
      // Markdown goes out as Matrix HTML too; the body keeps the text.
      yield* Effect.promise(() => alice.send(room, "**bold** and `a<b`"))
      const formatted = yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.sender === bot.userId && m.body === "echo: **bold** and `a<b`"))
      assert.strictEqual(formatted.formattedBody, "echo: <strong>bold</strong> and <code>a&lt;b</code>")
      const cursor = yield* Effect.flatMap(MessageStore, (s) => s.cursor(ConnectionName.make("mx"), SYNC_STREAM)).pipe(Effect.provide(ctx))
      assert.isTrue(Option.isSome(cursor) && cursor.value.position.length > 0)

      // A resend of one delivery (as after a crash) sends nothing twice: its part is claimed in the database, and a part left `sending` goes again under the same txn id, which the homeserver deduplicates.
      const channel = yield* Effect.map(Channels, (c) => c.get("mx")).pipe(Effect.provide(ctx))
      assert.isDefined(channel)
      assert.isTrue(channel!.idempotentResends)
      const delivery = { idempotencyKey: "resend-test", conversationId: `mx:${room}`, connection: "mx", place: room, kind: "reply" as const, text: "once only", previousAttempts: 0 }
      yield* channel!.send(delivery)
      yield* channel!.send({ ...delivery, previousAttempts: 1 })
      yield* Effect.promise(() => alice.send(room, "after resend"))
      yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.body === "echo: after resend"))
      const all = yield* Effect.promise(() => alice.messages(room))
      assert.strictEqual(all.filter((m) => m.body === "once only").length, 1)
      assert.match(txnIdOf(delivery), /^pynchy\.[A-Za-z0-9_-]{32}$/)
    }))

  it.scopedLive("a voice workspace's reply arrives with an m.audio event whose file decodes (sox) to more than 0 seconds, longer for a longer text", () =>
    Effect.gen(function* () {
      if (skipWithout("espeak-ng", "apt-get install espeak-ng") || skipWithout("sox", "apt-get install sox")) return
      const base = hostConfig(tempDir())
      const config = Either.getOrThrow(decodeConfig({
        dataDir: base.dataDir,
        workspaces: [{ id: "main", instructions: "test", voice: { enabled: true } }],
        routes: [{ connection: "mx", place: "*", workspace: "main" }],
        connections: { mx: { kind: "matrix", homeserver: synapse.baseUrl, userId: bot.userId, password: bot.password } }
      }, "test config"))
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir() })
      yield* Layer.build(makeTestHost(config, { runtimes: [{ plugin: "matrix", value: runtime }] }))
      const room = yield* Effect.promise(() => roomWithBot())
      const seconds: Array<number> = []
      for (const text of ["hi", "a much longer message than the first, so that its spoken reply lasts a good deal longer"]) {
        yield* Effect.promise(() => alice.send(room, text))
        yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.body === `echo: ${text}`))
        const audio = yield* eventually(async () => (await mediaEvents(alice, room)).length === seconds.length + 1 ? (await mediaEvents(alice, room)).at(-1) : undefined, { label: "an m.audio event" })
        assert.strictEqual(audio.sender, bot.userId)
        assert.strictEqual(audio.content.info?.mimetype, "audio/wav")
        const bytes = yield* Effect.promise(() => download(alice, audio.content.url))
        seconds.push(decodedSeconds(bytes, "wav"))
      }
      assert.isAbove(seconds[0]!, 0)
      assert.isAbove(seconds[1]!, seconds[0]!)
    }))

  it.scopedLive("a long reply arrives as parts in order, each within the event limit; the agent's outbox files follow as m.image and m.file events whose bytes download", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const outbox = path.join(dir, "workspaces", "main", "outbox")
      const agent = recordingAgent((text) => {
        if (!text.startsWith("make")) return
        fs.mkdirSync(outbox, { recursive: true })
        fs.writeFileSync(path.join(outbox, "chart.png"), "PNGDATA")
        fs.writeFileSync(path.join(outbox, "notes.txt"), "some notes")
      })
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir() })
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "matrix", value: runtime }], executor: agent.layer }))
      const room = yield* Effect.promise(() => roomWithBot())
      const long = "make " + Array.from({ length: 30 }, (_, i) => `paragraph ${i} ${"word ".repeat(60).trim()}`).join("\n\n")
      yield* Effect.promise(() => alice.send(room, long))
      const reply = `saw: ${long}`
      const parts = yield* eventually(async () => {
        // The text parts only: the file events that follow have a body too (their names).
        const mine = (await alice.messages(room)).filter((m) => m.sender === bot.userId && m.msgtype === "m.text")
        return mine.map((m) => m.body).join("\n\n") === reply ? mine : undefined
      }, { label: "every part of the long reply" })
      assert.isAbove(parts.length, 2)
      for (const part of parts) assert.isAtMost(part.body.length, MESSAGE_LIMIT)
      const media = yield* eventually(async () => {
        const events = await mediaEvents(alice, room, ["m.image", "m.file"])
        return events.length === 2 ? events : undefined
      }, { label: "the two files" })
      assert.deepStrictEqual(media.map((e) => [e.sender, e.content.msgtype, e.content.body, e.content.info?.mimetype]), [
        [bot.userId, "m.image", "chart.png", "image/png"],
        [bot.userId, "m.file", "notes.txt", "text/plain"]
      ])
      const bytes = yield* Effect.promise(() => Promise.all(media.map((e) => download(alice, e.content.url))))
      assert.deepStrictEqual(bytes.map((b) => new TextDecoder().decode(b)), ["PNGDATA", "some notes"])
    }))

  it.scopedLive("a file a user sends is downloaded into the workspace inbox and named to the agent with its caption; one past `files:` by its event, or encrypted, is named as not received", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const agent = recordingAgent()
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir(), files: FilesConfig.make({ maxBytes: 1_000 }) })
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "matrix", value: runtime }], executor: agent.layer }))
      const room = yield* Effect.promise(() => roomWithBot())
      yield* Effect.promise(() => alice.sendFile(room, { msgtype: "m.image", name: "photo.png", mimeType: "image/png", bytes: new TextEncoder().encode("PNG-BYTES"), caption: "look at this" }))
      const input = yield* eventually(Effect.sync(() => agent.inputs.find((t) => t.startsWith("look at this"))), { label: "the agent's input with the photo" })
      const saved = /\[file: (\/workspace\/inbox\/\S+-photo\.png) \(image\/png, 9 bytes\)\]/.exec(input)
      assert.isNotNull(saved, input)
      assert.strictEqual(fs.readFileSync(path.join(dir, "workspaces", "main", saved![1]!.slice("/workspace/".length)), "utf8"), "PNG-BYTES")
      // Refused from what the event says (its size), and an encrypted file (no `url`): named, the messages stored.
      yield* Effect.promise(() => alice.sendFile(room, { msgtype: "m.file", name: "big.pdf", mimeType: "application/pdf", bytes: new Uint8Array(5_000) }))
      yield* Effect.promise(() => alice.sendContent(room, { msgtype: "m.file", body: "secret.pdf", file: { url: "mxc://example.org/abc", v: "v2" }, info: { mimetype: "application/pdf", size: 10 } }))
      const refused = yield* eventually(Effect.sync(() => {
        const all = agent.inputs.join("\n")
        return all.includes("big.pdf") && all.includes("secret.pdf") ? all : undefined
      }), { label: "both refused files named to the agent" })
      assert.include(refused, "[file not received: big.pdf: too large (5000 bytes; the limit is 1000)]")
      assert.include(refused, "[file not received: secret.pdf: an encrypted file (not supported)]")
    }))

  it.scopedLive("rooms map to workspaces through routes; a room without a route is neither joined nor ingested", () =>
    Effect.gen(function* () {
      const [a, b, c] = yield* Effect.promise(() => Promise.all([alice.createRoom([bot.userId]), alice.createRoom([bot.userId]), alice.createRoom([bot.userId])]))
      const config = Either.getOrThrow(decodeConfig({
        dataDir: tempDir(),
        workspaces: [{ id: "main" }, { id: "other" }],
        routes: [{ connection: "mx", place: a, workspace: "main" }, { connection: "mx", place: b, workspace: "other" }],
        connections: {}
      }, "test config"))
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir() })
      const ctx = yield* Layer.build(makeTestHost(config, { runtimes: [{ plugin: "matrix", value: runtime }] }))
      yield* eventually(async () => ((await alice.members(a)).includes(bot.userId) && (await alice.members(b)).includes(bot.userId) ? true : undefined), { label: "the bot in both routed rooms" })
      yield* Effect.promise(() => Promise.all([alice.send(a, "to main"), alice.send(b, "to other"), alice.send(c, "to nobody")]))
      yield* Effect.promise(() => alice.awaitMessage(a, (m) => m.body === "echo: to main"))
      yield* Effect.promise(() => alice.awaitMessage(b, (m) => m.body === "echo: to other"))
      const store = yield* Effect.provide(MessageStore, ctx)
      const workspaceOf = (room: string) => store.conversation(ConversationId.make(`mx:${room}`)).pipe(Effect.map(Option.map((conv) => conv.workspace as string)))
      assert.deepStrictEqual([yield* workspaceOf(a), yield* workspaceOf(b), yield* workspaceOf(c)], [Option.some("main"), Option.some("other"), Option.none()])
      assert.notInclude(yield* Effect.promise(() => alice.members(c)), bot.userId)
    }))

  it.scopedLive("in a room of three only triggered messages are answered (the trigger word, the bot's id, an m.mentions of the bot); the others are stored as context; a room of two is always answered", () =>
    Effect.gen(function* () {
      const carol = yield* Effect.promise(() => synapse.register("carol"))
      const config = Either.getOrThrow(decodeConfig({
        dataDir: tempDir(),
        workspaces: [{ id: "main" }],
        routes: [{ connection: "mx", place: "*", workspace: "main", trigger: "pynchy" }],
        connections: {},
        limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 }
      }, "test config"))
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir() })
      const ctx = yield* Layer.build(makeTestHost(config, { runtimes: [{ plugin: "matrix", value: runtime }] }))
      const store = yield* Effect.provide(MessageStore, ctx)
      const group = yield* Effect.promise(() => alice.createRoom([bot.userId, carol.userId]))
      yield* Effect.promise(() => carol.join(group))
      yield* eventually(async () => {
        const members = await alice.members(group)
        return members.includes(bot.userId) && members.includes(carol.userId) ? true : undefined
      }, { label: "the bot and carol in the group room" })
      const botSaid = () => Effect.promise(() => alice.messages(group)).pipe(Effect.map((ms) => ms.filter((m) => m.sender === bot.userId).map((m) => m.body)))

      yield* Effect.promise(() => alice.send(group, "lunch at noon?"))
      yield* Effect.promise(() => carol.send(group, "pynchyfan says one"))
      yield* eventually(
        store.recent(ConversationId.make(`mx:${group}`), 10).pipe(Effect.map((ms) => ms.filter((m) => m.direction === "in" && m.handledBy !== null).length === 2 ? true : undefined)),
        { label: "the untriggered messages stored and handled" }
      )
      assert.deepStrictEqual(yield* botSaid(), [])
      yield* Effect.promise(() => carol.send(group, "Pynchy, what do you think?"))
      yield* Effect.promise(() => alice.awaitMessage(group, (m) => m.sender === bot.userId && m.body === "echo: Pynchy, what do you think?"))
      yield* Effect.promise(() => alice.send(group, `ask ${bot.userId} then`))
      yield* Effect.promise(() => alice.awaitMessage(group, (m) => m.sender === bot.userId && m.body === `echo: ask ${bot.userId} then`))
      yield* Effect.promise(() => alice.mention(group, "Bot: and you?", [bot.userId]))
      yield* Effect.promise(() => alice.awaitMessage(group, (m) => m.sender === bot.userId && m.body === "echo: Bot: and you?"))
      assert.deepStrictEqual(yield* botSaid(), ["echo: Pynchy, what do you think?", `echo: ask ${bot.userId} then`, "echo: Bot: and you?"])

      // The bot and one person: a direct chat, no trigger needed.
      const direct = yield* Effect.promise(() => roomWithBot())
      yield* Effect.promise(() => alice.send(direct, "just us"))
      yield* Effect.promise(() => alice.awaitMessage(direct, (m) => m.sender === bot.userId && m.body === "echo: just us"))
    }))

  it.scopedLive("isReady turns false while the homeserver is down and true again; nothing sent meanwhile is lost", () =>
    Effect.gen(function* () {
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings({ syncTimeoutMs: 1_000 }), dataDir: tempDir() })
      yield* Layer.build(makeTestHost(hostConfig(tempDir()), { runtimes: [{ plugin: "matrix", value: runtime }] }))
      const room = yield* Effect.promise(() => roomWithBot())
      yield* Effect.promise(() => alice.send(room, "before"))
      yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.body === "echo: before"))

      synapse.stop()
      yield* eventually(() => (Effect.runSync(runtime.isReady) ? undefined : true), { label: "the runtime not ready while the homeserver is down" })
      assert.isFalse(Effect.runSync(runtime.isReady))
      synapse.start()
      // Sent as soon as the homeserver answers, likely before the runtime's next sync succeeds.
      yield* Effect.promise(() => alice.send(room, "during recovery"))
      yield* eventually(() => (Effect.runSync(runtime.isReady) ? true : undefined), { label: "the runtime ready again" })
      yield* Effect.promise(() => alice.send(room, "after"))
      yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.body === "echo: after"))
      const all = yield* Effect.promise(() => alice.awaitMessage(room, (m) => m.body === "echo: during recovery").then(() => alice.messages(room)))
      for (const text of ["before", "during recovery", "after"]) assert.strictEqual(echoesOf(all, text), 1, text)
    }))

  it.live("close (host shutdown) stops the sync loop: the runtime is no longer ready", () =>
    Effect.gen(function* () {
      const runtime = makeMatrixRuntime({ name: "mx", settings: settings(), dataDir: tempDir() })
      yield* Effect.scoped(Effect.gen(function* () {
        yield* Layer.build(makeTestHost(hostConfig(tempDir()), { runtimes: [{ plugin: "matrix", value: runtime }] }))
        assert.isTrue(Effect.runSync(runtime.isReady))
      }))
      assert.isFalse(Effect.runSync(runtime.isReady))
    }))
})

describe.skipIf(skip)("Matrix host process against a real Synapse", () => {
  // Each test its own bot account: a host left over from a failed test cannot answer in another's rooms.
  const writeConfig = (dir: string, tokenFile: string, bot: MatrixUser) => {
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${dir}`,
      "workspaces: [{ id: main, agentCore: scripted }]",
      "routes: [{ connection: mx, place: '*', workspace: main }]",
      `connections: { mx: { kind: matrix, homeserver: '${synapse.baseUrl}', userId: '${bot.userId}', accessTokenFile: ${tokenFile}, maxBackoffMs: 500 } }`,
      "limits: { retryBaseMs: 10, runtimeReadyTimeoutMs: 20000 }"
    ].join("\n") + "\n")
    fs.writeFileSync(path.join(dir, tokenFile), bot.accessToken + "\n", { mode: 0o600 })
  }

  it("killed with kill -9 mid-turn, the host still replies exactly once after restart", async () => {
    const dir = tempDir()
    const bot = await synapse.register("bot-kill")
    writeConfig(dir, "bot.token", bot)
    const db = path.join(dir, "pynchy.db")
    let room: string | undefined
    const texts: Array<string> = []
    // Kill as soon as a turn runs; if the turn had already finished when the signal landed, try
    // again with the next message, until a kill lands mid-turn (the turn still running, no reply sent).
    for (let attempt = 0; attempt < 10; attempt++) {
      const host = await startHost(dir)
      room ??= await roomWithBot(bot)
      const text = `slow one ${attempt}`
      texts.push(text)
      await alice.send(room, text)
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n === 1 ? true : undefined), { label: "a running turn" }))
      await killHard(host)
      const running = query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n
      const sent = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'sent' AND text = ?", `echo: ${text}`)[0]!.n
      if (running === 1 && sent === 0) break
    }
    assert.strictEqual(query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n, 1, "no kill landed mid-turn")

    const second = await startHost(dir)
    try {
      await alice.awaitMessage(room!, (m) => m.body === `echo: ${texts.at(-1)}`)
      // A later message answered means the queue has moved past the first ones: count then.
      await alice.send(room!, "sentinel")
      await alice.awaitMessage(room!, (m) => m.body === "echo: sentinel")
      const all = await alice.messages(room!)
      for (const t of [...texts, "sentinel"]) assert.strictEqual(echoesOf(all, t, bot), 1, t)
      const receipts = query(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'mx'")[0]!.n
      assert.strictEqual(receipts, texts.length + 1)
      await awaitAllSent(db)
    } finally {
      await stopHost(second)
    }
  })

  it("a host that was down catches up from its durable cursor: every message answered once", async () => {
    const dir = tempDir()
    const bot = await synapse.register("bot-catchup")
    writeConfig(dir, "bot.token", bot)
    const db = path.join(dir, "pynchy.db")
    let host = await startHost(dir)
    const room = await roomWithBot(bot)
    await alice.send(room, "first")
    await alice.awaitMessage(room, (m) => m.body === "echo: first")
    await stopHost(host)
    const position = query(db, "SELECT position FROM cursors WHERE connection = 'mx' AND stream = 'sync'")[0]!.position
    assert.isString(position)

    // More than one sync's timeline limit (50): the runtime backfills the gap through /messages.
    const texts = Array.from({ length: 70 }, (_, i) => `offline ${i}`)
    for (const t of texts) await alice.send(room, t)
    host = await startHost(dir)
    try {
      await alice.awaitMessage(room, (m) => m.body === "echo: offline 69")
      const all = await Effect.runPromise(eventually(async () => {
        const ms = await alice.messages(room)
        return texts.every((t) => echoesOf(ms, t, bot) >= 1) ? ms : undefined
      }, { label: "an echo of every message sent while the host was down" }))
      for (const t of ["first", ...texts]) assert.strictEqual(echoesOf(all, t, bot), 1, t)
      await awaitAllSent(db)
    } finally {
      await stopHost(host)
    }
  })
})

describe("Matrix settings", () => {
  it("bad settings throw an error naming the fields, never the secret", () => {
    const bad = () => decodeMatrixSettings("mx", { kind: "matrix", homeserver: "ftp://x", userId: "bot", password: "s3cret", accessToken: "t0ken" })
    assert.throws(bad)
    try {
      bad()
    } catch (e) {
      const message = (e as Error).message
      assert.include(message, "connections.mx")
      assert.include(message, "homeserver")
      assert.include(message, "userId")
      assert.notInclude(message, "s3cret")
      assert.notInclude(message, "t0ken")
    }
    assert.throws(() => decodeMatrixSettings("mx", { kind: "matrix", homeserver: "http://h", userId: "@b:h" }), /connections\.mx\.accessToken/)
    assert.throws(() => decodeMatrixSettings("mx", { kind: "matrix", homeserver: "http://h", userId: "@b:h", password: "a", accessToken: "b" }), /connections\.mx\.accessToken\|password/)
  })

  it("without a route a matrix connection gets no runtime; with one it does", async () => {
    const { default: plugin } = await import("../../src/channels/matrix/plugin.js")
    const base = { dataDir: tempDir(), workspaces: [{ id: "main" }], connections: { mx: { kind: "matrix", homeserver: "http://127.0.0.1:1", userId: "@b:h", accessToken: "t" } } }
    const none = Either.getOrThrow(decodeConfig({ ...base, routes: [{ connection: "mx", place: "!r:h", workspace: "main", enabled: false }] }, "t"))
    const one = Either.getOrThrow(decodeConfig({ ...base, routes: [{ connection: "mx", place: "!r:h", workspace: "main" }] }, "t"))
    const ctx = (config: typeof none) => ({ config, connectionConfig: (n: string) => (config.connections as Record<string, Record<string, unknown>>)[n] })
    const runtimesOf = (config: typeof none) => plugin.connectionRuntime(ctx(config)) as Promise<ReadonlyArray<{ name: string; isReady: Effect.Effect<boolean> }>>
    assert.deepStrictEqual(await runtimesOf(none), [])
    const [rt] = await runtimesOf(one)
    assert.strictEqual(rt!.name, "mx")
    assert.isFalse(Effect.runSync(rt!.isReady))
  })
})

