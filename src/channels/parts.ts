/**
 * One delivery, sent as numbered parts when it is longer than the platform takes (split.ts). Each
 * part has its own key, `<delivery key>#<n>`, claimed in the host's database before it is handed
 * to the platform and marked sent after (DeliveryStore.claimPart). A resend of the delivery (after
 * a crash, or after a failed part) therefore sends only the parts that are missing:
 *
 * - a part marked sent is skipped;
 * - a part left `sending` (the call's outcome unknown: a crash, no answer) is not sent again,
 *   because the platform may have it: the other parts still go out, and the delivery then fails
 *   with `PartsOutcomeUnknown` (the outbox records it `unknown` and tells the user);
 * - a part that surely did not arrive (the platform refused it, the request never left) is
 *   released, so the next resend claims it again, and the delivery fails with `PartsNotSent`.
 *
 * A channel whose platform deduplicates by its own key (Matrix's txn id) may resend a `sending`
 * part under its key instead: `resendUnknown: true`. A platform that deduplicates only for a while
 * (Discord's message nonce) resends a `sending` part claimed less than `resendUnknownWithin` ago.
 * Both apply to the audio and file parts too.
 *
 * The audio of a spoken reply (`delivery.audio`) is one more part, after the text, keyed
 * `<delivery key>#audio`: claimed and settled like the others, so it never goes out twice; being
 * an extra, its failure is logged and never fails the delivery (its text arrived). The files of a
 * reply (`delivery.files`, the agent's outbox) follow, each its own part `<delivery key>#file<n>`,
 * claimed and settled like a text part: they are what the agent meant to send, so after all were
 * tried, one surely not sent fails the delivery with `PartsNotSent` (the resend sends only it) and
 * one that may be lost with `PartsOutcomeUnknown` (the user is told).
 */
import { Clock, type Context, Duration, Effect, Schema } from "effect"
import { DeliveryStore } from "../db/DeliveryStore.js"
import { ChannelSendFailed, type OutboundAudio, type OutboundDelivery, type OutboundFile, sendFailure } from "../contracts/channel.js"
import { splitText } from "./split.js"

/** A part surely not delivered: the delivery may be sent again (only its missing parts go). */
export class PartsNotSent extends Schema.TaggedError<PartsNotSent>()("PartsNotSent", { part: Schema.Number, count: Schema.Number, reason: Schema.String }) {
  override get message() {
    return `part ${this.part} of ${this.count} not sent: ${this.reason}`
  }
}

/** A part may or may not have arrived: it is never sent again. */
export class PartsOutcomeUnknown extends Schema.TaggedError<PartsOutcomeUnknown>()("PartsOutcomeUnknown", { parts: Schema.Array(Schema.Number), count: Schema.Number, reason: Schema.String }) {
  override get message() {
    return `part${this.parts.length > 1 ? "s" : ""} ${this.parts.join(", ")} of ${this.count} may be missing: ${this.reason}`
  }
}

/** How one part's call ended when it did not succeed: `notSent` when the platform surely does not have it. */
export interface PartFailure {
  readonly notSent: boolean
  readonly reason: string
}

export interface PartsOptions<E> {
  readonly delivery: Pick<OutboundDelivery, "idempotencyKey" | "text" | "audio" | "files">
  /** The platform's most characters per message. */
  readonly limit: number
  /** Sends part `index` (1-based) of `count` under its own key. */
  readonly sendPart: (part: { readonly text: string; readonly key: string; readonly index: number; readonly count: number }) => Effect.Effect<void, E>
  /** Sends the reply's audio (when the delivery has some) under its own key, after the text. */
  readonly sendAudio?: (audio: OutboundAudio, key: string) => Effect.Effect<void, E>
  /** Sends one of the reply's files (when the delivery has some) under its own key, after the text and audio. */
  readonly sendFile?: (file: OutboundFile, key: string) => Effect.Effect<void, E>
  /** Classifies a failed call. */
  readonly failure: (e: E) => PartFailure
  /** The platform deduplicates by the part's key: a part left `sending` is sent again under it. */
  readonly resendUnknown?: boolean
  /** The platform deduplicates by the part's key for this long after the first send: a part left `sending` younger than this is sent again. */
  readonly resendUnknownWithin?: Duration.DurationInput
}

export const partKey = (deliveryKey: string, index: number) => `${deliveryKey}#${index}`
/** The key of a delivery's audio part. */
export const audioKey = (deliveryKey: string) => `${deliveryKey}#audio`
/** The key of a delivery's file part `n` (1-based). */
export const fileKey = (deliveryKey: string, n: number) => `${deliveryKey}#file${n}`

export const sendInParts = <E>(options: PartsOptions<E>): Effect.Effect<void, PartsNotSent | PartsOutcomeUnknown, DeliveryStore> =>
  Effect.gen(function* () {
    const store = yield* DeliveryStore
    const parts = splitText(options.delivery.text, options.limit)
    const count = parts.length
    const unknown: Array<number> = []
    for (let i = 0; i < count; i++) {
      const index = i + 1
      const key = partKey(options.delivery.idempotencyKey, index)
      const claim = yield* store.claimPart(key)
      if (claim === "sent") continue
      if (claim === "sending" && !(yield* mayResend(key, options))) {
        unknown.push(index)
        continue
      }
      const sent = yield* Effect.either(options.sendPart({ text: parts[i]!, key, index, count }))
      if (sent._tag === "Right") {
        yield* store.settlePart(key, "sent")
        continue
      }
      const failure = options.failure(sent.left)
      if (!failure.notSent) return yield* new PartsOutcomeUnknown({ parts: [...unknown, index], count, reason: failure.reason })
      yield* store.settlePart(key, "released")
      return yield* new PartsNotSent({ part: index, count, reason: failure.reason })
    }
    if (unknown.length > 0) {
      return yield* new PartsOutcomeUnknown({ parts: unknown, count, reason: "an earlier send was interrupted" })
    }
    const { audio, files, idempotencyKey } = options.delivery
    if (audio !== undefined && options.sendAudio !== undefined) {
      yield* sendExtraPart(idempotencyKey, audioKey(idempotencyKey), "spoken reply: the audio was not sent; the text was", (key) => options.sendAudio!(audio, key), options)
    }
    if (files !== undefined && options.sendFile !== undefined) {
      // Every file is tried; then a file surely not sent fails the delivery so that the outbox
      // sends it again (only what is missing goes), and one that may be lost makes it unknown.
      const lost: Array<number> = []
      let notSent: { readonly n: number; readonly reason: string } | undefined
      for (const file of files) {
        const key = fileKey(idempotencyKey, file.n)
        const claim = yield* store.claimPart(key)
        if (claim === "sent") continue
        if (claim === "sending" && !(yield* mayResend(key, options))) {
          lost.push(file.n)
          continue
        }
        const sent = yield* Effect.either(options.sendFile(file, key))
        if (sent._tag === "Right") {
          yield* store.settlePart(key, "sent")
          continue
        }
        const failure = options.failure(sent.left)
        if (failure.notSent) {
          yield* store.settlePart(key, "released")
          notSent ??= { n: file.n, reason: failure.reason }
        } else lost.push(file.n)
        yield* Effect.logWarning("a reply's file was not sent").pipe(
          Effect.annotateLogs({ delivery: idempotencyKey, part: key, outcome: failure.notSent ? "not sent" : "unknown", reason: failure.reason })
        )
      }
      if (lost.length > 0) {
        return yield* new PartsOutcomeUnknown({ parts: lost.map((n) => count + n), count: count + files.length, reason: `file ${lost.join(", ")} of the reply may be missing` })
      }
      if (notSent !== undefined) {
        return yield* new PartsNotSent({ part: count + notSent.n, count: count + files.length, reason: `file ${notSent.n}: ${notSent.reason}` })
      }
    }
  })

/** Whether a part left `sending` may go again: the platform deduplicates it by its key (always, or within a window of its claim). */
const mayResend = (key: string, options: Pick<PartsOptions<never>, "resendUnknown" | "resendUnknownWithin">) =>
  options.resendUnknown === true
    ? Effect.succeed(true)
    : options.resendUnknownWithin === undefined
    ? Effect.succeed(false)
    : Effect.flatMap(DeliveryStore, (store) =>
      Effect.zipWith(store.partClaimedAt(key), Clock.currentTimeMillis, (at, now) =>
        at !== null && now - at < Duration.toMillis(Duration.decode(options.resendUnknownWithin!))))

/**
 * The audio goes after every text part has: it is an extra, so its failure never fails the
 * delivery (the text arrived). It is claimed like a part: one whose outcome is unknown is not sent
 * again (unless the platform deduplicates), and one surely not sent is released and logged.
 */
const sendExtraPart = <E>(deliveryKey: string, key: string, warning: string, send: (key: string) => Effect.Effect<void, E>, options: PartsOptions<E>) =>
  Effect.gen(function* () {
    const store = yield* DeliveryStore
    const claim = yield* store.claimPart(key)
    if (claim === "sent" || (claim === "sending" && !(yield* mayResend(key, options)))) return
    const sent = yield* Effect.either(send(key))
    if (sent._tag === "Right") return yield* store.settlePart(key, "sent")
    const failure = options.failure(sent.left)
    if (failure.notSent) yield* store.settlePart(key, "released")
    yield* Effect.logWarning(warning).pipe(
      Effect.annotateLogs({ delivery: deliveryKey, part: key, outcome: failure.notSent ? "not sent" : "unknown", reason: failure.reason })
    )
  })

/**
 * A built-in runtime's native send (`NativeChannel.send`): refused once its connection is closed,
 * run with the runtime's DeliveryStore, and an unknown outcome of its parts (`PartsOutcomeUnknown`)
 * kept unknown, so the outbox never resends what the platform may have.
 */
export const runtimeSend = <E>(
  connection: string,
  isOpen: () => boolean,
  services: Context.Context<DeliveryStore>,
  send: (delivery: OutboundDelivery) => Effect.Effect<void, E, DeliveryStore>
) =>
(delivery: OutboundDelivery): Effect.Effect<void, ChannelSendFailed> =>
  Effect.suspend(() =>
    isOpen()
      ? send(delivery).pipe(sendFailure((e) => e instanceof PartsOutcomeUnknown), Effect.provide(services))
      : Effect.fail(new ChannelSendFailed({ reason: `${connection} is closed`, outcomeUnknown: false }))
  )
