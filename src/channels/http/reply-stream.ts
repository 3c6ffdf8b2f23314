/**
 * The SSE stream of a conversation's replies to one client, read from the deliveries table: the
 * backlog after `after`, then each reply as it is recorded (`event: reply`, with its id, so a
 * client resumes with Last-Event-ID) and the streamed text of the reply to come (`event: delta`,
 * no id, never replayed), with a heartbeat. The HTTP API and the Control UI's chat serve it.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Chunk, Deferred, Effect, Queue, Schedule, Stream } from "effect"
import type { DeliveryStore } from "../../db/DeliveryStore.js"
import { type ConversationId, TurnId } from "../../domain/ids.js"
import { DELTA_BACKLOG, type Delta, type Reply, type ReplyHub, replyOf } from "./replies.js"

const HEARTBEAT = "15 seconds"

export interface ReplyStreamOptions {
  readonly deliveries: DeliveryStore.Service
  readonly hub: ReplyHub
  readonly conversationId: ConversationId
  readonly place: string
  /** Replies to this client's messages only (metadata `client` of its messages). */
  readonly client: string
  /** The last reply id the client has. */
  readonly after: number
  /** Replies read per page. */
  readonly pageSize: number
  /** The URL of a reply's audio, where the server serves it. */
  readonly audioUrl?: (replyId: number) => string
  /** The URL of a reply's file `n`, where the server serves it. */
  readonly fileUrl?: (replyId: number, n: number) => string
  /** Completed when the server closes: the stream ends. */
  readonly closing: Deferred.Deferred<void>
}

/**
 * The client's replies after `after`, up to `limit`, up to the first one the outbox has not begun
 * to send (it is listed once its send begins: a spoken reply's audio is stored by then, and a
 * client that moves its cursor past a reply never misses what comes with it). With `audioUrl`, a
 * reply whose audio is stored (a spoken reply, src/speech) carries `audio`, the URL that serves it;
 * with `fileUrl`, a reply with files (the agent's outbox) lists them with their URLs.
 */
export const repliesAfter = (deliveries: DeliveryStore.Service, conversationId: ConversationId, client: string, after: number, limit: number, audioUrl?: (replyId: number) => string, fileUrl?: (replyId: number, n: number) => string) =>
  Effect.gen(function* () {
    const recorded = yield* deliveries.ofClient({ conversationId, client, after, limit })
    const unsent = recorded.findIndex((d) => d.status === "pending" && d.attempts === 0)
    const ds = unsent === -1 ? recorded : recorded.slice(0, unsent)
    if (audioUrl === undefined && fileUrl === undefined) return ds.map((d) => replyOf(d))
    const keys = ds.filter((d) => d.kind === "reply").map((d) => d.idempotencyKey)
    const spoken = audioUrl === undefined ? new Map<string, unknown>() : yield* deliveries.audioFormats(keys)
    const files = fileUrl === undefined ? new Map<string, ReadonlyArray<{ readonly n: number; readonly name: string; readonly mimeType: string }>>() : yield* deliveries.fileLists(keys)
    return ds.map((d) =>
      replyOf(
        d,
        spoken.has(d.idempotencyKey) ? audioUrl?.(d.id) : undefined,
        files.get(d.idempotencyKey)?.map((f) => ({ name: f.name, type: f.mimeType, url: fileUrl!(d.id, f.n) }))
      ))
  })

export const replyStream = (options: ReplyStreamOptions): HttpServerResponse.HttpServerResponse => {
  const { client, conversationId, deliveries, hub, pageSize, place } = options
  const events = Stream.unwrapScoped(Effect.gen(function* () {
    const listener = { wake: yield* Queue.sliding<void>(1), deltas: yield* Queue.dropping<Delta>(DELTA_BACKLOG) }
    // Listening starts before the first read, so a reply recorded in between is not missed.
    yield* Effect.acquireRelease(Effect.sync(() => hub.listen(place, listener)), (unlisten) => Effect.sync(unlisten))
    let last = options.after
    const seen = new Set<string>()
    const ofClient = new Map<number, boolean>()
    const reply = (r: Reply) => `id: ${r.id}\nevent: reply\ndata: ${JSON.stringify(r)}\n\n`
    const newReplies: Effect.Effect<Array<string>> = Effect.gen(function* () {
      const out: Array<string> = []
      while (true) {
        const page = yield* repliesAfter(deliveries, conversationId, client, last, pageSize, options.audioUrl, options.fileUrl)
        for (const r of page) {
          last = r.id
          seen.add(r.key)
          out.push(reply(r))
        }
        if (page.length < pageSize) return out
      }
    })
    const delta = (d: Delta) =>
      Effect.gen(function* () {
        // A delta that lost the race with its own reply is stale: the reply said it all.
        if (seen.has(d.key)) return []
        let mine = ofClient.get(d.turnId)
        if (mine === undefined) {
          mine = yield* deliveries.turnOfClient(TurnId.make(d.turnId), client)
          ofClient.set(d.turnId, mine)
        }
        return mine ? [`event: delta\ndata: ${JSON.stringify(d)}\n\n`] : []
      })
    const backlog = yield* newReplies
    const live = Stream.merge(
      Stream.fromQueue(listener.wake).pipe(Stream.mapEffect(() => newReplies)),
      Stream.fromQueue(listener.deltas).pipe(Stream.mapEffect(delta))
    ).pipe(Stream.flattenIterables)
    const pings = Stream.fromSchedule(Schedule.spaced(HEARTBEAT)).pipe(Stream.as(": ping\n\n"))
    return Stream.fromIterable(["retry: 1000\n\n", ...backlog]).pipe(
      Stream.concat(Stream.merge(live, pings)),
      Stream.interruptWhen(Deferred.await(options.closing))
    )
  }))
  return sseResponse(events)
}

/** A text/event-stream response of already-formatted SSE frames. */
export const sseResponse = (frames: Stream.Stream<string>): HttpServerResponse.HttpServerResponse => {
  const encoder = new TextEncoder()
  return HttpServerResponse.stream(Stream.mapChunks(frames, Chunk.map((s) => encoder.encode(s))), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
  })
}
