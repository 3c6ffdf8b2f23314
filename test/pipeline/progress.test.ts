/**
 * A turn's progress (typing, streamed text) reaches the channel of its conversation without
 * being a delivery: the reply is delivered once, deltas are never rows, and a channel whose
 * progress throws, hangs or is slow neither blocks nor fails the turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer, Scope, TestClock } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import type { Channel, OutboundDelivery, ProgressEvent } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { PROGRESS_BUFFER } from "../../src/pipeline/progress.js"
import type { ConnectionRuntime } from "../../src/contracts/connection-runtime.js"
import { awaitSettled } from "../support/host.js"
import { tempDir } from "../support/db.js"
import { streamingExecutor } from "../support/streaming.js"
import { eventually } from "../support/eventually.js"

const config = () =>
  Either.getOrThrow(decodeConfig({
    dataDir: tempDir(),
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "probe", place: "*", workspace: "main" }],
    connections: {}
  }, "test config"))

/** A connection runtime that binds `channel` for connection `probe`. */
const binding = (channel: Channel): ConnectionRuntime => {
  let ready = false
  return {
    name: "probe-runtime",
    start: async (context) => {
      context.channels.bind(channel)
      ready = true
    },
    close: async () => void (ready = false),
    isReady: () => ready
  }
}

const probeChannel = (progress?: (event: ProgressEvent) => void | Promise<void>) => {
  const sent: Array<OutboundDelivery> = []
  const channel: Channel = {
    name: "probe",
    idempotentResends: true,
    send: async (d) => void sent.push(d),
    ...(progress ? { progress } : {})
  }
  return { channel, sent }
}

const hostWith = (channel: Channel, hold?: () => Promise<void>) =>
  Layer.build(makeTestHost(config(), { executor: streamingExecutor({ pieces: 3, ...(hold ? { hold } : {}) }), runtimes: [{ plugin: "test", value: binding(channel) }] }))

const say = (text: string, id = `e-${text}`) =>
  Effect.flatMap(Ingest, (i) => i.ingest({ connection: "probe", place: "room", providerEventId: id, sender: "u", text }))

const conv = ConversationId.make("probe:room")

describe("turn progress", () => {
  it.scopedLive("a streamed turn: started, deltas keyed to the reply they precede, ended; the reply is delivered once and deltas are no rows", () =>
    Effect.gen(function* () {
      const events: Array<ProgressEvent> = []
      // The turn holds its reply until the channel has shown the three deltas.
      let shown!: () => void
      const allShown = new Promise<void>((resolve) => (shown = resolve))
      const { channel, sent } = probeChannel((e) => {
        events.push(e)
        if (events.filter((x) => x.type === "delta").length === 3) shown()
      })
      const ctx = yield* hostWith(channel, () => allShown)
      yield* say("hello world").pipe(Effect.provide(ctx))
      const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      yield* eventually(() => events.find((e) => e.type === "ended"), { label: "the ended event" })

      assert.deepStrictEqual(events.map((e) => e.type), ["started", "delta", "delta", "delta", "ended"])
      const deltas = events.flatMap((e) => (e.type === "delta" ? [e] : []))
      assert.strictEqual(deltas.map((d) => d.text).join(""), "echo: hello world")
      assert.deepStrictEqual(sent.map((d) => [d.idempotencyKey, d.text]), [[deltas[0]!.replyKey, "echo: hello world"]])
      assert.isTrue(deltas.every((d) => d.replyKey === deltas[0]!.replyKey && d.conversationId === conv && d.place === "room" && d.connection === "probe"))
      // Deliveries and outbound messages hold the reply only, once.
      assert.deepStrictEqual(settled.map((d) => [d.kind, d.text, d.status]), [["reply", "echo: hello world", "sent"]])
      const all = yield* Effect.flatMap(DeliveryStore, (s) => s.byConversation(conv, 100)).pipe(Effect.provide(ctx))
      assert.strictEqual(all.length, 1)
      const outbound = yield* Effect.flatMap(MessageStore, (s) => s.recent(conv, 100)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(outbound.filter((m) => m.direction === "out").map((m) => m.text), ["echo: hello world"])
    }))

  it.scopedLive("deltas not yet shown when their reply is recorded are dropped: none reaches the channel after the reply", () =>
    Effect.gen(function* () {
      const sentKeys = new Set<string>()
      const late: Array<string> = []
      let deltas = 0
      const { channel, sent } = probeChannel((e) => {
        if (e.type !== "delta") return
        deltas++
        if (sentKeys.has(e.replyKey)) late.push(e.replyKey)
      })
      const send = channel.send
      const ctx = yield* hostWith({ ...channel, send: (d) => (sentKeys.add(d.idempotencyKey), send(d)) })
      for (let i = 0; i < 20; i++) yield* say(`m${i}`).pipe(Effect.provide(ctx))
      yield* awaitSettled(conv, 20).pipe(Effect.provide(ctx))
      assert.strictEqual(sent.length, 20)
      // Some deltas may be dropped (the executor replies at once); none shows after its own reply.
      assert.deepStrictEqual(late, [], `${deltas} deltas shown`)
    }))

  it.scopedLive("a channel without progress gets only the reply", () =>
    Effect.gen(function* () {
      const { channel, sent } = probeChannel()
      const ctx = yield* hostWith(channel)
      yield* say("plain").pipe(Effect.provide(ctx))
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sent.map((d) => d.text), ["echo: plain"])
    }))

  for (const [how, progress] of [
    ["throws", () => {
      throw new Error("broken channel")
    }],
    ["rejects", () => Promise.reject(new Error("broken channel"))],
    ["never answers", () => new Promise<void>(() => undefined)]
  ] as const) {
    it.scopedLive(`a channel whose progress ${how}: the turn completes and the reply is delivered once`, () =>
      Effect.gen(function* () {
        const { channel, sent } = probeChannel(progress)
        const ctx = yield* hostWith(channel)
        yield* say("still here").pipe(Effect.provide(ctx))
        yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(sent.map((d) => d.text), ["echo: still here"])
        const turns = yield* Effect.provide(TurnStore, ctx)
        yield* eventually(Effect.map(turns.recent(conv, 5), ([t]) => (t?.status === "completed" ? t : undefined)), { label: "the turn completed" })
        assert.deepStrictEqual((yield* turns.recent(conv, 5)).map((t) => t.status), ["completed"])
      }))
  }
})

describe("the progress feed", () => {
  const target = { conversationId: "probe:room", connection: "probe", place: "room", turnId: 1 }

  it.scopedLive("a slow channel drops deltas past the buffer instead of queueing them; emitting never waits", () =>
    Effect.gen(function* () {
      const channels = yield* Channels.make
      const calls: Array<ProgressEvent> = []
      let release!: () => void
      const gate = new Promise<void>((r) => (release = r))
      const { channel } = probeChannel(async (e) => {
        calls.push(e)
        await gate
      })
      yield* Effect.asVoid(channels.bind(channel))
      const scope = yield* Scope.make()
      const feed = yield* channels.progress(target).pipe(Scope.extend(scope))
      for (let i = 0; i < PROGRESS_BUFFER * 4; i++) yield* feed.delta("t1:0", `d${i} `)
      // The channel is still busy with `started`: nothing else was handed to it.
      yield* eventually(() => (calls.length === 1 ? true : undefined), { label: "the channel busy with started" })
      release()
      yield* Scope.close(scope, Exit.void)
      const last = yield* eventually(() => calls.find((e) => e.type === "ended"), { label: "the ended event" })
      assert.strictEqual(last.type, "ended")
      const deltas = calls.filter((e) => e.type === "delta")
      assert.strictEqual(deltas.length, PROGRESS_BUFFER)
      assert.strictEqual(calls[0]!.type, "started")
    }))

  it.scoped("a call that hangs past its deadline stalls the feed: later deltas are dropped, ended is still sent", () =>
    Effect.gen(function* () {
      const channels = yield* Channels.make
      const calls: Array<ProgressEvent> = []
      const { channel } = probeChannel((e) => {
        calls.push(e)
        return e.type === "started" ? new Promise<void>(() => undefined) : undefined
      })
      yield* Effect.asVoid(channels.bind(channel))
      const scope = yield* Scope.make()
      const feed = yield* channels.progress(target).pipe(Scope.extend(scope))
      yield* eventually(() => (calls.length === 1 ? true : undefined), { label: "the started call" })
      yield* TestClock.adjust("5 seconds")
      for (let i = 0; i < 10; i++) yield* feed.delta("t1:0", "x")
      yield* Scope.close(scope, Exit.void)
      yield* eventually(() => calls.find((e) => e.type === "ended"), { label: "the ended call" })
      assert.deepStrictEqual(calls.map((e) => e.type), ["started", "ended"])
    }))
})
