/**
 * OpenTelemetry export through the real stack: with OTEL_EXPORTER_OTLP_ENDPOINT set, one inbound
 * message answered by a real turn (bwrap sandbox, the runner, the gateway, a scripted
 * OpenAI-compatible upstream, SQLite, the recording channel) reaches an OTLP/HTTP receiver as one
 * trace whose spans are linked ingest → turn → sandbox → gateway attempt, with the delivery in it;
 * the runner's turn.json and the upstream's `traceparent` carry the same trace. A turn rerun after
 * a restart continues the trace of its message.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer, Logger, LogLevel, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId, ExecutorId } from "../../src/domain/ids.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { AgentExecutor, ExecutorLiveness } from "../../src/pipeline/AgentExecutor.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { TurnSpec } from "../../src/protocol/ipc.js"
import { tempDir } from "../support/db.js"
import { awaitLatestTurnEnded, awaitSettled, recordingConfig, sentLines } from "../support/host.js"
import { otlpReceiver, type ReceivedSpan } from "../support/otlp.js"
import { skipWithout } from "../support/system.js"
import { chatAnswer, json, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "../sandbox/support.js"
import { Schema } from "effect"

const KEY_ENV = "PYNCHY_OTEL_TEST_KEY"
const conv = ConversationId.make("test:room")
const quiet = Logger.minimumLogLevel(LogLevel.None)

/** Points the standard variables at the receiver for the test's scope. */
const exportTo = (endpoint: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint
      process.env.OTEL_SERVICE_NAME = "pynchy-test"
    }),
    () => Effect.sync(() => {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT
      delete process.env.OTEL_SERVICE_NAME
    })
  )

const one = (spans: ReadonlyArray<ReceivedSpan>, name: string): ReceivedSpan => {
  const found = spans.filter((s) => s.name === name)
  assert.strictEqual(found.length, 1, `one '${name}' span in the trace, got ${found.length}: ${spans.map((s) => s.name).join(", ")}`)
  return found[0]!
}

/** Whether `ancestor` is on the parent chain of `span` (inside one trace). */
const descends = (trace: ReadonlyArray<ReceivedSpan>, span: ReceivedSpan, ancestor: ReceivedSpan): boolean => {
  let at: ReceivedSpan | undefined = span
  while (at !== undefined) {
    if (at.parentSpanId === ancestor.spanId) return true
    at = trace.find((s) => s.spanId === at!.parentSpanId)
  }
  return false
}

const traceparent = (s: ReceivedSpan) => `00-${s.traceId}-${s.spanId}-01`

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("OpenTelemetry export through the real stack", () => {
  it.scopedLive("one inbound message is one exported trace: ingest → turn → sandbox → gateway attempt, and its delivery", () =>
    Effect.gen(function* () {
      const receiver = yield* otlpReceiver
      yield* exportTo(receiver.endpoint)
      process.env[KEY_ENV] = "sk-otel-test"
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
      const upstream = yield* scriptedUpstream((_hit, res) => json(res, 200, chatAnswer("tiny")))
      const dir = tempDir()
      const cfg: PynchyConfig = Either.getOrThrow(decodeConfig({
        dataDir: dir,
        routes: [{ connection: "test", place: "*", workspace: "main" }],
        connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
        providers: [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
        workspaces: [{ id: "main", instructions: "Be brief.", agentCore: "openai" }]
      }, "test config"))
      const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
      const runnerPath = yield* Effect.promise(runnerBundle)

      // The host runs in its own scope: closing it (the host's shutdown) flushes the exporter.
      const hostScope = yield* Scope.make()
      const ctx = yield* Layer.buildWithScope(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }).pipe(Layer.provide(quiet)), hostScope)
      const ingested = yield* Effect.flatMap(Ingest, (i) => i.ingest({ connection: "test", place: "room", providerEventId: "e1", sender: "u", text: "hi" })).pipe(Effect.provide(ctx))
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["hello"])
      const stored = yield* Effect.flatMap(MessageStore, (s) => s.get(ingested.messageId)).pipe(Effect.provide(ctx))
      const sid = turn.owner!.executor.slice("sandbox:".length)
      const turnFile = Schema.decodeUnknownSync(Schema.parseJson(TurnSpec))(fs.readFileSync(path.join(dir, "sandboxes", sid, "turn.json"), "utf8"))
      yield* Scope.close(hostScope, Exit.void)

      // One trace, rooted at the ingest span of the message.
      assert.isAbove(receiver.spans.length, 0, "the receiver got spans")
      const ingest = one(receiver.spans.filter((s) => s.attributes["pynchy.message.id"] === ingested.messageId), "Ingest.ingest")
      assert.strictEqual(ingest.parentSpanId, undefined, "the ingest span is the root of the message's trace")
      assert.strictEqual(ingest.service, "pynchy-test")
      const trace = receiver.spans.filter((s) => s.traceId === ingest.traceId)
      const run = one(trace, "TurnRunner.run")
      const sandbox = one(trace, "SandboxExecutor.execute")
      const attempt = one(trace, "gateway.attempt")
      const send = one(trace, "Outbox.send")
      assert.strictEqual(run.parentSpanId, ingest.spanId, "turn ← ingest")
      assert.strictEqual(run.attributes["pynchy.turn.id"], turn.id)
      assert.strictEqual(run.attributes["pynchy.turn.outcome"], "Completed")
      assert.strictEqual(sandbox.parentSpanId, run.spanId, "sandbox ← turn")
      assert.strictEqual(attempt.parentSpanId, sandbox.spanId, "gateway attempt ← sandbox")
      assert.strictEqual(attempt.attributes["pynchy.gateway.model"], "tiny")
      assert.strictEqual(attempt.attributes["http.response.status_code"], 200)
      assert.isTrue(descends(trace, send, run), "the delivery's send is inside the turn's trace, under the turn")
      assert.strictEqual(send.attributes["pynchy.delivery.kind"], "reply")
      // Single SQL statements are not recorded (docs/observability.md).
      assert.isFalse(receiver.spans.some((s) => s.name === "sql.execute"), "no sql.execute span is exported")

      // The same context was stored with the message, written into turn.json and sent upstream.
      assert.strictEqual(stored._tag === "Some" ? stored.value.traceParent : null, traceparent(ingest))
      assert.strictEqual(turnFile.traceparent, traceparent(sandbox))
      assert.strictEqual(upstream.hits.length, 1)
      assert.strictEqual(upstream.hits[0]!.headers.traceparent, traceparent(attempt))
      assert.isTrue(receiver.contentTypes.every((t) => t.startsWith("application/json")))
    }))
})

/** An executor that never ends its turn: the host is stopped with the turn running. */
const stuck = Layer.merge(
  Layer.succeed(AgentExecutor, AgentExecutor.of({
    allocate: () => Effect.succeed(ExecutorId.make("stuck:1")),
    execute: () => Effect.never,
    adopt: () => Effect.never
  })),
  Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
)

describe("a turn rerun after a restart", () => {
  it.scopedLive("continues the trace of its message (the context stored with it), and so does its delivery", () =>
    Effect.gen(function* () {
      const receiver = yield* otlpReceiver
      yield* exportTo(receiver.endpoint)
      const dir = tempDir()
      const config = recordingConfig(dir)
      const databaseFile = path.join(dir, "pynchy.db")
      const first = yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(makeTestHost(config, { databaseFile, executor: stuck }).pipe(Layer.provide(quiet)))
        const m = yield* Effect.flatMap(Ingest, (i) => i.ingest({ connection: "test", place: "room", providerEventId: "1", sender: "u", text: "hello" })).pipe(Effect.provide(ctx))
        const turns = yield* Effect.provide(TurnStore, ctx)
        while ((yield* turns.recent(conv, 1))[0]?.status !== "running") yield* Effect.yieldNow()
        return m
      }))
      // The host stopped mid-turn; the next one (the scripted agent) reruns the interrupted turn.
      yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(makeTestHost(config, { databaseFile }).pipe(Layer.provide(quiet)))
        const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        assert.strictEqual(settled[0]!.status, "sent")
        // The reply goes out while its turn finishes: the run's span ends with the turn.
        yield* awaitLatestTurnEnded(conv).pipe(Effect.provide(ctx))
      }))

      const ingest = one(receiver.spans.filter((s) => s.attributes["pynchy.message.id"] === first.messageId), "Ingest.ingest")
      const runs = receiver.spans.filter((s) => s.name === "TurnRunner.run")
      assert.strictEqual(runs.length, 2, "a run before the restart and one after")
      for (const run of runs) {
        assert.strictEqual(run.traceId, ingest.traceId)
        assert.strictEqual(run.parentSpanId, ingest.spanId)
      }
      assert.deepStrictEqual(runs.map((r) => r.attributes["pynchy.turn.attempt"]), [1, 2])
      assert.strictEqual(runs[1]!.attributes["pynchy.turn.outcome"], "Completed")
      const send = one(receiver.spans.filter((s) => s.traceId === ingest.traceId), "Outbox.send")
      assert.isTrue(descends(receiver.spans, send, runs[1]!))
    }))
})
