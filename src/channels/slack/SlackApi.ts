/**
 * The few Web API calls the Slack runtime makes (auth.test, chat.postMessage, and
 * conversations.history / conversations.replies for catch-up), through the
 * WebClient of a bolt App, and the optional packages loaded on first use (the CLI bundle must
 * load without them).
 *
 * The client is made with no retries of its own and rate-limited calls rejected: chat.postMessage
 * has no idempotency key, so whether to call again is decided by the runtime, which knows which
 * failures mean "not posted" (an answer from Slack, a request that never left) and which mean
 * "maybe posted" (no answer). Failures are `SlackApiError` with the method, Slack's error code and
 * `Retry-After`; never a token or a message's content.
 */
import { Effect, Schema } from "effect"
import type * as Bolt from "@slack/bolt"
import { importModule } from "../../system/import-module.js"

export class SlackApiError extends Schema.TaggedError<SlackApiError>()("SlackApiError", {
  operation: Schema.String,
  /** Slack's `error` (e.g. `invalid_auth`, `channel_not_found`): it answered, and refused. */
  error: Schema.optional(Schema.String),
  /** The HTTP status of an answer that was not Slack's JSON. */
  status: Schema.optional(Schema.Number),
  /** `Retry-After` of a 429, in seconds. */
  retryAfterSeconds: Schema.optional(Schema.Number),
  /** The request surely never reached Slack (connection refused, DNS): a resend cannot duplicate. */
  notSent: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {
  override get message() {
    return `slack ${this.operation} failed${
      this.error !== undefined ? ` (${this.error})` : this.retryAfterSeconds !== undefined ? ` (429, retry after ${this.retryAfterSeconds} s)` : this.status !== undefined ? ` (HTTP ${this.status})` : ": Slack unreachable"
    }`
  }
  /** Slack answered: it did not take the call (a platform error, a 429, a 4xx). */
  get answered() {
    return this.error !== undefined || this.retryAfterSeconds !== undefined || (this.status !== undefined && this.status < 500)
  }
}

/** Errors of node's fetch stack that mean the request never left this machine. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"])

const codeOf = (e: unknown): string | undefined => {
  for (let at: unknown = e, depth = 0; at !== null && typeof at === "object" && depth < 5; depth++) {
    const code = (at as { code?: unknown }).code
    if (typeof code === "string" && !code.startsWith("slack_")) return code
    at = (at as { original?: unknown }).original ?? (at as { cause?: unknown }).cause
  }
  return undefined
}

export const toSlackError = (operation: string) => (e: unknown): SlackApiError => {
  const x = (e ?? {}) as { code?: unknown; data?: { error?: unknown }; retryAfter?: unknown; statusCode?: unknown }
  switch (x.code) {
    case "slack_webapi_platform_error":
      return new SlackApiError({ operation, error: typeof x.data?.error === "string" ? x.data.error.slice(0, 100) : "unknown_error" })
    case "slack_webapi_rate_limited_error":
      return new SlackApiError({ operation, status: 429, retryAfterSeconds: typeof x.retryAfter === "number" ? x.retryAfter : 1 })
    case "slack_webapi_http_error":
      return new SlackApiError({ operation, ...(typeof x.statusCode === "number" ? { status: x.statusCode } : {}) })
  }
  const code = codeOf(e)
  return new SlackApiError({ operation, notSent: code !== undefined && NOT_SENT_CODES.has(code) })
}

/** @slack/bolt itself, or a typed failure naming the missing package. */
export const loadBolt = Effect.tryPromise({
  try: () => importModule<typeof Bolt>("@slack/bolt"),
  catch: () => new SlackApiError({ operation: "load @slack/bolt", error: "the optional package '@slack/bolt' is not installed (npm install @slack/bolt)" })
})

/** The WebClient options every Slack client here uses: the API base, no hidden retries. */
export const clientOptions = (apiUrl: string) => ({
  slackApiUrl: apiUrl.endsWith("/") ? apiUrl : `${apiUrl}/`,
  retryConfig: { retries: 0 },
  rejectRateLimitedCalls: true,
  timeout: 30_000
})

export interface BotIdentity {
  readonly userId: string
  readonly botId: string | undefined
  readonly team: string | undefined
}

const AuthTest = Schema.Struct({ user_id: Schema.String, bot_id: Schema.optional(Schema.String), team: Schema.optional(Schema.String) })

export interface WebApi {
  readonly authTest: Effect.Effect<BotIdentity, SlackApiError>
  /** Posts one message (mrkdwn) to a channel, in a thread when `threadTs` is given. */
  readonly postMessage: (channel: string, threadTs: string | undefined, text: string) => Effect.Effect<void, SlackApiError>
  /**
   * One page (up to 100) of a channel's messages after `oldest`, or of a thread's (`threadTs`):
   * the messages as Slack gives them (undecoded), and the cursor of the next page if there is one.
   */
  readonly historyPage: (query: { readonly channel: string; readonly threadTs: string | undefined; readonly oldest: string; readonly cursor: string | undefined }) => Effect.Effect<HistoryPage, SlackApiError>
}

export interface HistoryPage {
  readonly messages: ReadonlyArray<unknown>
  readonly next: string | undefined
}

const Page = Schema.Struct({
  messages: Schema.optionalWith(Schema.Array(Schema.Unknown), { default: () => [] }),
  has_more: Schema.optional(Schema.Boolean),
  response_metadata: Schema.optional(Schema.Struct({ next_cursor: Schema.optional(Schema.String) }))
})

/** The calls, through a bolt-made WebClient (`app.client`, or one made for a probe). */
export const webApi = (client: Bolt.webApi.WebClient): WebApi => ({
  authTest: Effect.tryPromise({ try: () => client.auth.test(), catch: toSlackError("auth.test") }).pipe(
    Effect.flatMap((r) => Schema.decodeUnknown(AuthTest)(r)),
    Effect.map((r) => ({ userId: r.user_id, botId: r.bot_id, team: r.team })),
    Effect.catchTag("ParseError", () => new SlackApiError({ operation: "auth.test", error: "unexpected_answer" }))
  ),
  postMessage: (channel, threadTs, text) =>
    Effect.tryPromise({
      try: () => client.chat.postMessage({ channel, text, mrkdwn: true, unfurl_links: false, unfurl_media: false, ...(threadTs !== undefined ? { thread_ts: threadTs } : {}) }),
      catch: toSlackError("chat.postMessage")
    }).pipe(Effect.asVoid),
  historyPage: ({ channel, cursor, oldest, threadTs }) => {
    const operation = threadTs === undefined ? "conversations.history" : "conversations.replies"
    const query = { channel, oldest, limit: 100, inclusive: false, ...(cursor !== undefined ? { cursor } : {}) }
    return Effect.tryPromise({
      try: () => (threadTs === undefined ? client.conversations.history(query) : client.conversations.replies({ ...query, ts: threadTs })),
      catch: toSlackError(operation)
    }).pipe(
      Effect.flatMap((r) => Schema.decodeUnknown(Page)(r)),
      Effect.map((r): HistoryPage => {
        const next = r.response_metadata?.next_cursor
        return { messages: r.messages, next: r.has_more === true && next !== undefined && next !== "" ? next : undefined }
      }),
      Effect.catchTag("ParseError", () => new SlackApiError({ operation, error: "unexpected_answer" }))
    )
  }
})
