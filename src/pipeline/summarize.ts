/**
 * Summaries through the host's own gateway: a token minted for the workspace and model, one
 * chat completion on the gateway's socket (or its 127.0.0.1 port), under a deadline. The host
 * speaks to the gateway as a sandbox would, so budgets, routing and usage apply alike.
 */
import { Clock, Duration, Effect, Redacted, Schema } from "effect"
import * as http from "node:http"
import type { Gateway } from "../gateway/Gateway.js"

export class SummaryFailed extends Schema.TaggedError<SummaryFailed>()("SummaryFailed", {
  /** `no_gateway`, `no_model`, `summary_timeout`, `summary_http_<status>`, `summary_refused`, `summary_transport`, `summary_malformed`. */
  code: Schema.String
}) {}

export interface SummaryRequest {
  readonly workspace: string
  readonly conversationId: string
  readonly model: string
  /** The summary this one extends, if any. */
  readonly previous: string | null
  /** The part that fell out of the window, oldest first, as `name: text` lines. */
  readonly transcript: ReadonlyArray<string>
  readonly maxTokens: number
  readonly timeoutMs: number
}

export const SUMMARY_INSTRUCTIONS =
  "You summarize the earlier part of a conversation between a user and an assistant so that the assistant can continue it. " +
  "Keep facts about the people (names, preferences), decisions, open questions and commitments. Write plain prose, no preamble."

const Completion = Schema.Struct({
  choices: Schema.NonEmptyArray(Schema.Struct({
    finish_reason: Schema.optional(Schema.NullOr(Schema.String)),
    message: Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)), refusal: Schema.optional(Schema.NullOr(Schema.String)) })
  }))
})
const decodeCompletion = Schema.decodeUnknownEither(Schema.parseJson(Completion))

const post = (target: { socketPath: string } | { url: string }, token: string, body: string) =>
  Effect.async<{ status: number; body: string }, SummaryFailed>((resume) => {
    const base = "socketPath" in target ? { socketPath: target.socketPath } : { hostname: new URL(target.url).hostname, port: Number(new URL(target.url).port) }
    const req = http.request({
      ...base, method: "POST", path: "/v1/chat/completions", agent: false,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${token}` }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") })))
      res.on("error", () => resume(Effect.fail(new SummaryFailed({ code: "summary_transport" }))))
    })
    req.on("error", () => resume(Effect.fail(new SummaryFailed({ code: "summary_transport" }))))
    req.end(body)
    return Effect.sync(() => req.destroy())
  })

/** One summary; any failure is a `SummaryFailed` with a code, never the text it was given. */
export const summarize = (gateway: Gateway.Service, request: SummaryRequest) =>
  Effect.gen(function* () {
    const target = gateway.socketPath !== null ? { socketPath: gateway.socketPath } : gateway.url !== null ? { url: gateway.url } : null
    if (target === null) return yield* new SummaryFailed({ code: "no_gateway" })
    const now = yield* Clock.currentTimeMillis
    const minted = yield* Effect.acquireRelease(
      gateway.mintToken({ workspace: request.workspace, conversationId: request.conversationId, models: [request.model], expiresAt: now + request.timeoutMs }),
      (m) => m.revoke
    )
    const previous = request.previous === null ? "" : `The summary so far:\n${request.previous}\n\nWhat was said after it:\n`
    const body = JSON.stringify({
      model: request.model,
      max_tokens: request.maxTokens,
      messages: [
        { role: "system", content: SUMMARY_INSTRUCTIONS },
        { role: "user", content: `${previous}${request.transcript.join("\n")}\n\nWrite the summary (at most ${request.maxTokens} tokens).` }
      ]
    })
    const reply = yield* post(target, Redacted.value(minted.token), body).pipe(
      Effect.timeoutFail({ duration: Duration.millis(request.timeoutMs), onTimeout: () => new SummaryFailed({ code: "summary_timeout" }) })
    )
    if (reply.status !== 200) return yield* new SummaryFailed({ code: `summary_http_${reply.status}` })
    const decoded = decodeCompletion(reply.body)
    if (decoded._tag === "Left") return yield* new SummaryFailed({ code: "summary_malformed" })
    const choice = decoded.right.choices[0]
    const text = choice.message.content?.trim() ?? ""
    if (text === "" || (choice.message.refusal ?? null) !== null || choice.finish_reason === "content_filter") return yield* new SummaryFailed({ code: "summary_refused" })
    return text
  }).pipe(Effect.scoped)
