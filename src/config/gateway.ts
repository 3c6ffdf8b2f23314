/**
 * The `gateway:` section of pynchy.yaml (`PynchyConfig.gateway`, src/config/schema.ts). Providers
 * stay in `providers:`; this section groups their models, and sets routing, retries, cooldown,
 * budgets, limits and where the gateway listens.
 */
import { Schema } from "effect"

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())
const Millis = Schema.Int.pipe(Schema.between(0, 86_400_000))

export const RoutingStrategy = Schema.Literal("weighted-shuffle", "least-in-flight", "lowest-latency")
export type RoutingStrategy = typeof RoutingStrategy.Type

/** One deployment of a model group: a provider (by name) and the model id it knows. */
export class GroupDeployment extends Schema.Class<GroupDeployment>("GroupDeployment")({
  provider: Schema.NonEmptyTrimmedString,
  /** The model id sent upstream. */
  model: Schema.NonEmptyTrimmedString,
  /** Defaults to the provider's weight. */
  weight: Schema.optional(Schema.Number.pipe(Schema.positive()))
}) {}

/**
 * A public model name mapped to deployments. Without groups, each provider model is its own
 * public name (providers listing the same model share it).
 */
export class ModelGroup extends Schema.Class<ModelGroup>("ModelGroup")({
  name: Schema.NonEmptyTrimmedString,
  deployments: Schema.NonEmptyArray(GroupDeployment),
  /** Groups tried, in order, when every deployment of this one failed or is cooling down. */
  fallbacks: Schema.optionalWith(Schema.Array(Schema.NonEmptyTrimmedString), { default: () => [] })
}) {}

export class GatewayListen extends Schema.Class<GatewayListen>("GatewayListen")({
  /** Listen on `<dataDir>/gateway.sock` (the sandbox's way in). */
  socket: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** File mode of the socket. Tokens are the access control; the mode is defence in depth. */
  socketMode: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 0o777)), { default: () => 0o600 }),
  /** Also listen on 127.0.0.1:port (0 picks a free port). */
  port: Schema.optional(Schema.Int.pipe(Schema.between(0, 65_535)))
}) {}

export class GatewayRetry extends Schema.Class<GatewayRetry>("GatewayRetry")({
  /** Upstream attempts per request, across deployments and fallback groups. */
  attempts: Schema.optionalWith(PositiveInt, { default: () => 3 }),
  /** Exponential backoff base (jittered). */
  baseMs: Schema.optionalWith(Millis, { default: () => 100 }),
  /** No single backoff is longer than this. */
  maxDelayMs: Schema.optionalWith(Millis, { default: () => 5_000 }),
  /**
   * The longest Retry-After (or cooldown) the gateway waits out itself; a longer one goes back to
   * the client as the upstream's answer.
   */
  maxWaitMs: Schema.optionalWith(Millis, { default: () => 10_000 })
}) {}

export class GatewayCooldown extends Schema.Class<GatewayCooldown>("GatewayCooldown")({
  /** Consecutive failures a deployment may have before it cools down. */
  allowedFails: Schema.optionalWith(NonNegativeInt, { default: () => 3 }),
  cooldownMs: Schema.optionalWith(Millis, { default: () => 30_000 })
}) {}

export class GatewayTimeouts extends Schema.Class<GatewayTimeouts>("GatewayTimeouts")({
  /** Until the upstream's response headers (a retryable timeout). */
  headersMs: Schema.optionalWith(Millis, { default: () => 120_000 }),
  /** Silence allowed between two body chunks once the answer started (not retryable). */
  idleMs: Schema.optionalWith(Millis, { default: () => 300_000 }),
  /** Largest request body accepted. */
  maxBodyBytes: Schema.optionalWith(PositiveInt, { default: () => 32 * 1024 * 1024 })
}) {}

export class GatewayBudgets extends Schema.Class<GatewayBudgets>("GatewayBudgets")({
  /** Tokens per workspace per UTC day; none means unlimited. */
  dailyTokens: Schema.optional(PositiveInt),
  /** Per-workspace overrides of `dailyTokens`. */
  workspaces: Schema.optionalWith(Schema.Record({ key: Schema.String, value: PositiveInt }), { default: () => ({}) }),
  /**
   * Output tokens reserved at admission for a request that sets no cap (`max_tokens`,
   * `max_completion_tokens`, `max_output_tokens`); a request that sets one reserves that.
   */
  defaultMaxTokens: Schema.optionalWith(PositiveInt, { default: () => 4_096 }),
  /** Input estimate reserved at admission: one token per this many request body bytes (inline image data aside). */
  inputBytesPerToken: Schema.optionalWith(PositiveInt, { default: () => 4 }),
  /**
   * Input tokens reserved per image of unknown size (an OpenAI `detail: "low"` one: 85). The
   * default covers Anthropic's models up to Claude 4.6 (images scaled to ~1.15 MP, ~1,600 tokens)
   * and OpenAI's high detail for gpt-4o (at most 85 + 8 x 170); models that bill more per image
   * need more.
   */
  imageTokens: Schema.optionalWith(PositiveInt, { default: () => 1_600 })
}) {}

export class GatewayLimits extends Schema.Class<GatewayLimits>("GatewayLimits")(
  Schema.Struct({
    /** Requests one turn token may have open at once (receiving the body included); more get 429. */
    inFlightPerToken: Schema.optionalWith(PositiveInt, { default: () => 8 }),
    /**
     * Open connections across the shared listeners (`<dataDir>/gateway.sock` and TCP); more are
     * closed at accept. Sandboxes never count here: each has a socket of its own.
     */
    maxConnections: Schema.optionalWith(PositiveInt, { default: () => 256 }),
    /** Open connections on one sandbox's own gateway socket; more are closed at accept. */
    connectionsPerSandbox: Schema.optionalWith(PositiveInt, { default: () => 32 }),
    /**
     * Connections one token (turn token or gateway key) may have carried requests on and still hold
     * open; a request on one more gets 429. Never fewer than `inFlightPerToken`.
     */
    connectionsPerToken: Schema.optionalWith(PositiveInt, { default: () => 16 }),
    /** A connection whose request headers are not complete this long after it opened (or after its previous answer) gets 408 and is closed. */
    headersTimeoutMs: Schema.optionalWith(Schema.Int.pipe(Schema.between(100, 600_000)), { default: () => 10_000 }),
    /** A whole request (headers and body) must arrive within this; else 408 and closed. */
    requestTimeoutMs: Schema.optionalWith(Schema.Int.pipe(Schema.between(100, 3_600_000)), { default: () => 120_000 }),
    /** A kept-alive connection idle this long after an answer is closed. */
    idleTimeoutMs: Schema.optionalWith(Schema.Int.pipe(Schema.between(100, 600_000)), { default: () => 5_000 })
  }).pipe(Schema.filter((l) =>
    l.headersTimeoutMs <= l.requestTimeoutMs || {
      path: ["headersTimeoutMs"],
      message: `headersTimeoutMs (${l.headersTimeoutMs}) must not be longer than requestTimeoutMs (${l.requestTimeoutMs})`
    }))
) {}

export class GatewayConfig extends Schema.Class<GatewayConfig>("GatewayConfig")({
  listen: Schema.optionalWith(GatewayListen, { default: () => GatewayListen.make({}) }),
  modelGroups: Schema.optionalWith(Schema.Array(ModelGroup), { default: () => [] }),
  routing: Schema.optionalWith(RoutingStrategy, { default: () => "weighted-shuffle" as const }),
  retry: Schema.optionalWith(GatewayRetry, { default: () => GatewayRetry.make({}) }),
  cooldown: Schema.optionalWith(GatewayCooldown, { default: () => GatewayCooldown.make({}) }),
  timeouts: Schema.optionalWith(GatewayTimeouts, { default: () => GatewayTimeouts.make({}) }),
  budgets: Schema.optionalWith(GatewayBudgets, { default: () => GatewayBudgets.make({}) }),
  limits: Schema.optionalWith(GatewayLimits, { default: () => GatewayLimits.make({}) })
}) {}
