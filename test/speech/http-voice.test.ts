/**
 * Spoken replies through a test host (scripted core) and the HTTP API on 127.0.0.1: a voice
 * workspace's replies carry an audio URL whose WAV decodes (sox) to a duration that grows with the
 * text; a plugin synthesizer that throws or hangs costs the audio only, the text still arrives.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Context, Effect, Either, Layer } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { makeHttpRuntime } from "../../src/channels/http/HttpRuntime.js"
import { decodeHttpSettings, hashToken } from "../../src/channels/http/settings.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { definePlugin } from "../../src/contracts/plugin.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { skipWithout } from "../support/system.js"
import { decodedSeconds } from "./support.js"

const TOKEN = "voice-token"

const brokenSynthesizers = definePlugin({
  name: "broken-speech",
  speechSynthesizer: () => [
    { name: "throws", synthesize: () => Promise.reject(new Error("the voice is gone")) },
    { name: "hangs", synthesize: () => new Promise<never>(() => {}) }
  ]
})

const config = (dir: string) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [
      { id: "spoken", instructions: "test", voice: { enabled: true, voice: "en" } },
      { id: "throws", instructions: "test", voice: { enabled: true, synthesizer: "throws" } },
      { id: "hangs", instructions: "test", voice: { enabled: true, synthesizer: "hangs", timeoutSeconds: 1 } },
      { id: "silent", instructions: "test" }
    ],
    routes: ["spoken", "throws", "hangs", "silent"].map((w) => ({ connection: "web", place: w, workspace: w })),
    connections: {}
  }, "test config"))

const presentTunnel = definePlugin({
  name: "present-tunnel",
  tunnel: () => ({ name: "here", detect: async () => ({ present: true, url: "https://pynchy.example.ts.net/", detail: "a test tunnel" }) })
})

const withHostOf = (settings: Record<string, unknown> = {}) => Effect.gen(function* () {
  const runtime = makeHttpRuntime({ name: "web", settings: decodeHttpSettings("web", { kind: "http", port: 0, tokens: [hashToken(TOKEN)], ...settings }), dataDir: tempDir() })
  const ctx = yield* Layer.build(makeTestHost(config(tempDir()), {
    runtimes: [{ plugin: "http", value: runtime }],
    plugins: [
      { name: "broken-speech", load: () => Promise.resolve(brokenSynthesizers) },
      { name: "present-tunnel", load: () => Promise.resolve(presentTunnel) }
    ]
  }))
  return { ctx, base: `http://127.0.0.1:${runtime.port()}` }
})
const withHost = withHostOf()

const authed = { authorization: `Bearer ${TOKEN}` }

const post = (base: string, place: string, text: string) =>
  Effect.promise(() => fetch(`${base}/v1/conversations/${place}/messages`, { method: "POST", headers: { ...authed, "content-type": "application/json" }, body: JSON.stringify({ text }) }).then((r) => r.status))

interface Reply { readonly id: number; readonly key: string; readonly text: string; readonly audio?: string }

/** The place's replies once `n` of them are sent (the outbox has settled them). */
const sentReplies = (ctx: Context.Context<DeliveryStore>, base: string, place: string, n: number) =>
  eventually(
    Effect.gen(function* () {
      const body = yield* Effect.promise(() => fetch(`${base}/v1/conversations/${place}/replies`, { headers: authed }).then((r) => r.json() as Promise<{ replies: Array<Reply> }>))
      const deliveries = yield* Effect.provide(DeliveryStore, ctx).pipe(Effect.flatMap((s) => s.byConversation(ConversationId.make(`web:${place}`), 100)))
      const sent = deliveries.filter((d) => d.status === "sent").length
      return body.replies.length >= n && sent >= n ? body.replies : undefined
    }),
    { label: `${n} sent replies in ${place}`, timeout: "60 seconds" }
  )

const audioOf = (base: string, url: string) =>
  Effect.promise(async () => {
    const res = await fetch(`${base}${url}`, { headers: authed })
    return { status: res.status, type: res.headers.get("content-type"), bytes: new Uint8Array(await res.arrayBuffer()) }
  })

describe.skipIf(skipWithout("espeak-ng", "apt-get install espeak-ng") || skipWithout("sox", "apt-get install sox"))("spoken replies over the HTTP API", () => {
  it.scopedLive("a voice workspace's replies carry an audio URL; the WAV decodes to a duration that grows with the text", () =>
    Effect.gen(function* () {
      const { base, ctx } = yield* withHost
      assert.strictEqual(yield* post(base, "spoken", "hi"), 202)
      const [short] = yield* sentReplies(ctx, base, "spoken", 1)
      assert.strictEqual(yield* post(base, "spoken", "this message is a great deal longer than the first one, so the spoken reply to it lasts longer"), 202)
      const replies = yield* sentReplies(ctx, base, "spoken", 2)
      const long = replies[1]!
      assert.match(short!.audio ?? "", /^\/v1\/conversations\/spoken\/replies\/\d+\/audio$/)
      const a = yield* audioOf(base, short!.audio!)
      const b = yield* audioOf(base, long.audio!)
      assert.strictEqual(a.status, 200)
      assert.strictEqual(a.type, "audio/wav")
      const [shortSeconds, longSeconds] = [decodedSeconds(a.bytes, "wav"), decodedSeconds(b.bytes, "wav")]
      assert.isAbove(shortSeconds, 0)
      assert.isAbove(longSeconds, shortSeconds)
      // Another token cannot read it; a workspace without voice has no audio.
      const other = yield* Effect.promise(() => fetch(`${base}${short!.audio}`, { headers: { authorization: "Bearer nope" } }).then((r) => r.status))
      assert.strictEqual(other, 401)
      assert.strictEqual(yield* post(base, "silent", "hi"), 202)
      const [silent] = yield* sentReplies(ctx, base, "silent", 1)
      assert.isUndefined(silent!.audio)
      assert.strictEqual(silent!.text, "echo: hi")
    }))

  it.scopedLive("a synthesizer that throws or hangs (deadline) costs the audio: the text is delivered", () =>
    Effect.gen(function* () {
      const { base, ctx } = yield* withHost
      for (const place of ["throws", "hangs"]) {
        assert.strictEqual(yield* post(base, place, "hello"), 202)
        const [reply] = yield* sentReplies(ctx, base, place, 1)
        assert.strictEqual(reply!.text, "echo: hello")
        assert.isUndefined(reply!.audio, place)
      }
    }))

  it.scopedLive("with publicUrl: tunnel, the audio URL is under the first present tunnel's URL", () =>
    Effect.gen(function* () {
      const { base, ctx } = yield* withHostOf({ publicUrl: "tunnel" })
      assert.strictEqual(yield* post(base, "spoken", "hi"), 202)
      const [reply] = yield* sentReplies(ctx, base, "spoken", 1)
      assert.match(reply!.audio ?? "", /^https:\/\/pynchy\.example\.ts\.net\/v1\/conversations\/spoken\/replies\/\d+\/audio$/)
      // The same path answers here (the tunnel forwards to it).
      const audio = yield* audioOf(base, new URL(reply!.audio!).pathname)
      assert.strictEqual(audio.status, 200)
      assert.isAbove(decodedSeconds(audio.bytes, "wav"), 0)
    }))
})
