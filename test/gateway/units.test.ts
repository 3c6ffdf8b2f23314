import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Fiber, FastCheck as fc, Layer, Option, Schema, TestClock } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import { ProviderConfig, PynchyConfig } from "../../src/config/schema.js"
import { Budgets } from "../../src/gateway/budgets.js"
import { type Catalog, type Deployment, resolveCatalog } from "../../src/gateway/catalog.js"
import { GatewayBudgets, GatewayConfig } from "../../src/config/gateway.js"
import { Deadlines } from "../../src/gateway/deadlines.js"
import { InFlight } from "../../src/gateway/in-flight.js"
import { GatewaySettings } from "../../src/gateway/Gateway.js"
import { maskChunk, maskTruncated, REDACTED, redactHeaders, redactText, redactValue, StreamMasker } from "../../src/gateway/redact.js"
import { Router } from "../../src/gateway/router.js"
import { TokenTable } from "../../src/gateway/tokens.js"
import { SseUsageTap, usageOfJson } from "../../src/gateway/usage.js"

const dep = (id: string, extra: Partial<Deployment> = {}): Deployment => ({
  id, provider: id, kind: "openai-compatible", model: "m", weight: 1, protocol: "http:", hostname: "127.0.0.1", port: 1,
  basePath: "/v1", key: Option.none(), rpm: undefined, tpm: undefined, coolable: true, ...extra
})
const catalogOf = (groups: Record<string, { ds: Array<Deployment>; fallbacks?: Array<string> }>): Catalog => {
  const all = new Map<string, Deployment>()
  for (const g of Object.values(groups)) for (const d of g.ds) all.set(d.id, d)
  return {
    deployments: [...all.values()],
    groups: new Map(Object.entries(groups).map(([name, g]) => [name, { name, deployments: g.ds, fallbacks: g.fallbacks ?? [] }])),
    secrets: []
  }
}
const none = new Set<string>()

describe("router", () => {
  it.prop("weighted shuffle picks only available deployments, in proportion to weight", [fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 2, maxLength: 5 }), fc.array(fc.double({ min: 0, max: 0.999999, noNaN: true }), { minLength: 50, maxLength: 50 })], ([weights, rolls]) => {
    const ds = weights.map((w, i) => dep(`d${i}`, { weight: w }))
    let k = 0
    const router = new Router(catalogOf({ m: { ds } }), { strategy: "weighted-shuffle", allowedFails: 0, cooldownMs: 1_000, random: () => rolls[k++ % rolls.length]! })
    router.onFailure(ds[0]!, 0, undefined) // d0 cools down
    const chain = router.chain("m")!
    for (let i = 0; i < 50; i++) {
      const picked = router.pick(chain, "chat", none, 10)!
      assert.notStrictEqual(picked.id, "d0")
    }
    // A pinned roll lands where the cumulative weights say.
    const total = weights.reduce((a, b) => a + b, 0)
    const fixed = new Router(catalogOf({ m: { ds } }), { strategy: "weighted-shuffle", allowedFails: 0, cooldownMs: 0, random: () => (weights[0]! - 0.5) / total })
    assert.strictEqual(fixed.pick(fixed.chain("m")!, "chat", none, 0)!.id, "d0")
  })

  it("least in flight and lowest latency", () => {
    const [a, b] = [dep("a"), dep("b")]
    const least = new Router(catalogOf({ m: { ds: [a, b] } }), { strategy: "least-in-flight", allowedFails: 3, cooldownMs: 1_000 })
    least.onStart(a, 0)
    assert.strictEqual(least.pick(least.chain("m")!, "chat", none, 0)!.id, "b")
    const fast = new Router(catalogOf({ m: { ds: [a, b] } }), { strategy: "lowest-latency", allowedFails: 3, cooldownMs: 1_000 })
    fast.onHeaders(a, 50)
    assert.strictEqual(fast.pick(fast.chain("m")!, "chat", none, 0)!.id, "b", "an unmeasured deployment gets a sample first")
    fast.onHeaders(b, 80)
    assert.strictEqual(fast.pick(fast.chain("m")!, "chat", none, 0)!.id, "a")
    for (let i = 0; i < 10; i++) fast.onHeaders(a, 200)
    assert.strictEqual(fast.pick(fast.chain("m")!, "chat", none, 0)!.id, "b", "the EWMA follows")
  })

  it("cooldown after allowed fails, Retry-After, rpm windows, untried first, fallbacks in order", () => {
    const [a, b, c] = [dep("a"), dep("b", { rpm: 2 }), dep("c")]
    const router = new Router(catalogOf({ m: { ds: [a, b], fallbacks: ["n"] }, n: { ds: [c] } }), { strategy: "weighted-shuffle", allowedFails: 1, cooldownMs: 5_000, random: () => 0 })
    const chain = router.chain("m")!
    assert.deepStrictEqual(chain.map((g) => g.name), ["m", "n"])
    router.onFailure(a, 0, undefined)
    assert.strictEqual(router.pick(chain, "chat", none, 0)!.id, "a", "one failure is allowed")
    router.onFailure(a, 0, undefined)
    assert.strictEqual(router.status(0).find((s) => s.id === "a")!.cooldownUntil, 5_000)
    assert.strictEqual(router.pick(chain, "chat", none, 0)!.id, "b")
    router.onStart(b, 0)
    router.onStart(b, 0)
    assert.strictEqual(router.pick(chain, "chat", none, 0)!.id, "c", "b is at its rpm: the fallback group serves")
    assert.isTrue(router.hasFresh(chain, "chat", new Set(["b"]), 0))
    assert.isFalse(router.hasFresh(chain, "chat", new Set(["c"]), 0))
    assert.strictEqual(router.waitFor(chain, "chat", 0), 0)
    router.onFailure(c, 0, 7_000)
    assert.isUndefined(router.pick(chain, "chat", none, 0))
    assert.strictEqual(router.waitFor(chain, "chat", 0), 5_000)
    assert.strictEqual(router.pick(chain, "chat", none, 60_000)!.id, "a", "windows and cooldowns end")
    assert.strictEqual(router.pick(chain, "chat", new Set(["a", "b", "c"]), 60_000)!.id, "a", "tried ones serve again when nothing else can")
  })

  it("never cools down the sole deployment of a group without fallbacks, but honours its Retry-After", () => {
    const solo = dep("solo", { coolable: false })
    const router = new Router(catalogOf({ m: { ds: [solo] } }), { strategy: "weighted-shuffle", allowedFails: 0, cooldownMs: 5_000 })
    for (let i = 0; i < 5; i++) router.onFailure(solo, 0, undefined)
    assert.strictEqual(router.pick(router.chain("m")!, "chat", none, 0)!.id, "solo")
    router.onFailure(solo, 0, 1_000)
    assert.isUndefined(router.pick(router.chain("m")!, "chat", none, 999))
  })

  it("an API a provider kind does not serve is never routed to it", () => {
    const openai = dep("o", { kind: "openai" })
    const ant = dep("a", { kind: "anthropic" })
    const router = new Router(catalogOf({ m: { ds: [openai, ant] } }), { strategy: "weighted-shuffle", allowedFails: 0, cooldownMs: 0 })
    assert.strictEqual(router.pick(router.chain("m")!, "messages", none, 0)!.id, "a")
    assert.strictEqual(router.pick(router.chain("m")!, "responses", none, 0)!.id, "o")
  })
})

describe("usage", () => {
  it("reads OpenAI, Responses and Anthropic usage from JSON", () => {
    assert.deepStrictEqual(usageOfJson(JSON.stringify({ usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 4 } } })),
      { inputTokens: 10, outputTokens: 5, cacheReadTokens: 4, cacheWriteTokens: 0, totalTokens: 15 })
    assert.deepStrictEqual(usageOfJson(JSON.stringify({ usage: { input_tokens: 3, output_tokens: 2, cache_read_input_tokens: 10, cache_creation_input_tokens: 1 } })),
      { inputTokens: 3, outputTokens: 2, cacheReadTokens: 10, cacheWriteTokens: 1, totalTokens: 16 })
    assert.strictEqual(usageOfJson(JSON.stringify({ usage: { input_tokens: 7, output_tokens: 1, input_tokens_details: { cached_tokens: 5 } } }))!.totalTokens, 8)
    assert.isNull(usageOfJson("{\"choices\":[]}"))
    assert.isNull(usageOfJson("not json"))
  })

  it.prop("finds streamed usage however the stream is cut into chunks", [fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 30 })], ([cuts]) => {
    const stream = [
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n",
      "data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"h\u00e9llo \u2603\"}}\n\n",
      "data: {\"choices\":[],\"usage\":null}\n\n",
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n",
      "data: [DONE]\n\n"
    ].join("")
    const bytes = Buffer.from(stream)
    const tap = new SseUsageTap()
    let at = 0
    for (const n of cuts) {
      if (at >= bytes.length) break
      tap.push(bytes.subarray(at, at + n))
      at += n
    }
    if (at < bytes.length) tap.push(bytes.subarray(at))
    assert.deepStrictEqual(tap.result(), { inputTokens: 12, outputTokens: 9, cacheReadTokens: 0, cacheWriteTokens: 0, totalTokens: 21 })
  })
})

describe("redaction", () => {
  const keyChars = fc.stringOf(fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"), { minLength: 20, maxLength: 60 })
  it.prop("key-like strings are masked wherever they sit in text", [fc.constantFrom("sk-", "sk-proj-", "sk-ant-api03-", "pgw_", "Bearer "), keyChars, fc.string(), fc.string()], ([prefix, body, before, after]) => {
    const secret = prefix + body
    assert.notInclude(redactText(`${before} ${secret} ${after}`), body)
  })

  it.prop("known secrets are masked in text and in chunks, keeping chunk length", [fc.string({ minLength: 8, maxLength: 30 }).filter((s) => s.trim().length >= 8), fc.string(), fc.string()], ([secret, before, after]) => {
    assert.notInclude(redactText(`${before}${secret}${after}`, [secret]), secret)
    const chunk = Buffer.from(`${before}${secret}${after}${secret}`)
    const length = chunk.length
    assert.notInclude(maskChunk(chunk, [Buffer.from(secret)]).toString(), secret)
    assert.strictEqual(chunk.length, length)
  })

  it.prop("a stream split anywhere never lets a known secret through, keeps its length and holds back only a secret's start", [
    fc.array(fc.oneof(fc.constant("K"), fc.constant("k2"), fc.stringOf(fc.constantFrom("a", "b", "s", "k", "-", "\n"), { maxLength: 12 })), { maxLength: 12 }),
    fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 8 })
  ], ([parts, cuts]) => {
    const secrets = ["sk-abcdefgh", "ks-zz"]
    const text = parts.map((p) => (p === "K" ? secrets[0] : p === "k2" ? secrets[1] : p)).join("") + "\n"
    const whole = Buffer.from(text)
    const points = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b)
    const masker = new StreamMasker(secrets.map((s) => Buffer.from(s)))
    const out: Array<Buffer> = []
    let from = 0
    for (const at of [...points, whole.length]) {
      const piece = masker.push(Buffer.from(whole.subarray(from, at)))
      // What is held is never more than the longest secret minus one byte.
      out.push(Buffer.from(piece))
      assert.isAtMost(at - out.reduce((n, b) => n + b.length, 0), secrets[0]!.length - 1)
      from = at
    }
    const rest = masker.end()
    if (rest) out.push(rest)
    const seen = Buffer.concat(out).toString()
    for (const secret of secrets) assert.notInclude(seen, secret)
    assert.strictEqual(seen.length, whole.length)
    // Ending in a newline, nothing is masked but the secrets: the same as masking the whole body.
    assert.strictEqual(seen, maskChunk(Buffer.from(text), secrets.map((s) => Buffer.from(s))).toString())
  })

  it("a body cut inside a secret has the secret's start masked too", () => {
    const secret = Buffer.from("canary0123456789")
    const out = maskTruncated(Buffer.from(`hello canary0123456789`), 12, [secret]).toString()
    assert.strictEqual(out, "hello ******")
    assert.strictEqual(maskTruncated(Buffer.from("hello world"), 5, [secret]).toString(), "hello")
  })

  it("credential headers and secret-named fields", () => {
    assert.deepStrictEqual(redactHeaders({ Authorization: "Bearer abc", "x-api-key": "k", "content-type": "application/json" }),
      { Authorization: REDACTED, "x-api-key": REDACTED, "content-type": "application/json" })
    assert.deepStrictEqual(redactValue({ apiKey: "x", nested: [{ token: "y", tokens: 3 }], note: "sk-abcdefghijkl" }),
      { apiKey: REDACTED, nested: [{ token: REDACTED, tokens: 3 }], note: REDACTED })
  })
})

describe("tokens, budgets, deadlines", () => {
  it("tokens: random, bound, expire on sight and in sweeps, revocation cuts in-flight work", () => {
    const table = new TokenTable()
    const a = table.mint({ workspace: "w", conversationId: "c", models: ["m"], expiresAt: 100, tokenBudget: 5 }, 0)
    const b = table.mint({ workspace: "w", conversationId: "c", expiresAt: 200 }, 0)
    assert.notStrictEqual(a, b)
    assert.match(a, /^pgw_[A-Za-z0-9_-]{43}$/)
    assert.deepStrictEqual([...table.lookup(a, 99)!.models!], ["m"])
    let cut = 0
    table.lookup(b, 0)!.inFlight.add(() => cut++)
    assert.isTrue(table.revoke(b))
    assert.strictEqual(cut, 1)
    assert.isUndefined(table.lookup(a, 100))
    table.mint({ workspace: "w", conversationId: "c", expiresAt: 10 }, 0)
    assert.strictEqual(table.sweep(10), 1)
    assert.strictEqual(table.size, 0)
  })

  it("in flight: slots are reused, an ended request is forgotten, revocation cancels each live one once", () => {
    const inFlight = new InFlight()
    const cancelled: Array<string> = []
    const cancelA = () => void cancelled.push("a")
    const cancelB = () => void cancelled.push("b")
    const a = inFlight.add(cancelA)
    const b = inFlight.add(cancelB)
    assert.strictEqual(inFlight.size, 2)
    inFlight.delete(a, cancelA)
    inFlight.delete(a, cancelA)
    assert.strictEqual(inFlight.size, 1, "a second delete of the same slot changes nothing")
    const cancelC = () => void cancelled.push("c")
    const c = inFlight.add(cancelC)
    assert.strictEqual(c, a, "the freed slot is reused")
    inFlight.delete(a, cancelA)
    assert.strictEqual(inFlight.size, 2, "a request that ended does not free its slot's next holder")
    inFlight.cancelAll()
    assert.sameMembers(cancelled, ["b", "c"])
    assert.strictEqual(inFlight.size, 0)
    // A request's own end after the revocation (its response closes) finds its slot gone, even
    // when a later request holds the same slot number.
    const cancelE = () => void cancelled.push("e")
    inFlight.add(cancelE)
    inFlight.delete(b, cancelB)
    inFlight.delete(0, cancelC)
    assert.strictEqual(inFlight.size, 1)
    inFlight.cancelAll()
    assert.deepStrictEqual(cancelled.slice(2), ["e"])
    const cancelD = () => void cancelled.push("d")
    const d = inFlight.add(cancelD)
    inFlight.delete(d, cancelD)
    inFlight.cancelAll()
    assert.strictEqual(cancelled.length, 3, "an ended request is not cancelled")
  })

  it("budgets: per workspace, per UTC day, overrides win", () => {
    const budgets = new Budgets(GatewayBudgets.make({ dailyTokens: 100, workspaces: { big: 1_000 } }))
    budgets.add("w", 100, 5)
    const over = budgets.check("w", 6)
    assert.isFalse(over.ok)
    if (!over.ok) assert.strictEqual(over.resetsAt, 86_400_000)
    assert.isTrue(budgets.check("big", 6).ok)
    assert.isTrue(budgets.check("w", 86_400_000).ok)
    assert.isTrue(new Budgets(GatewayBudgets.make({})).check("w", 0).ok)
  })

  it("budgets: once spent plus reserved reaches the limit nothing fits, not even a request of no size", () => {
    const budgets = new Budgets(GatewayBudgets.make({ dailyTokens: 100 }))
    budgets.add("w", 60, 5)
    budgets.reserve("w", 39)
    assert.isTrue(budgets.check("w", 6, 1).ok)
    assert.isFalse(budgets.check("w", 6, 2).ok)
    budgets.reserve("w", 1)
    assert.isFalse(budgets.check("w", 6, 0).ok)
    budgets.release("w", 40)
    assert.isTrue(budgets.check("w", 6, 40).ok)
  })

  it.effect("deadlines fire in order on the Effect Clock; cleared ones never fire", () =>
    Effect.gen(function* () {
      const clock = yield* Effect.clock
      const deadlines = new Deadlines(1_000, () => clock.unsafeCurrentTimeMillis())
      const fiber = yield* Effect.fork(deadlines.run)
      const fired: Array<string> = []
      deadlines.add(() => fired.push("a"))
      const b = deadlines.add(() => fired.push("b"))
      yield* TestClock.adjust(500)
      deadlines.add(() => fired.push("c"))
      b.clear()
      yield* TestClock.adjust(500)
      assert.deepStrictEqual(fired, ["a"])
      yield* TestClock.adjust(500)
      assert.deepStrictEqual(fired, ["a", "c"])
      yield* Fiber.interrupt(fiber)
    }))
})

describe("config", () => {
  const p = (fields: Partial<ProviderConfig> & Pick<ProviderConfig, "name" | "kind">) => ({ models: [], weight: 1, ...fields }) as ProviderConfig

  it.effect("every problem is listed: missing keys, unknown providers and groups, bad base URLs", () =>
    Effect.gen(function* () {
      const config = yield* Schema.decodeUnknown(GatewayConfig)({
        modelGroups: [
          { name: "g", deployments: [{ provider: "nope", model: "x" }], fallbacks: ["missing", "g"] },
          { name: "g", deployments: [{ provider: "ok", model: "x" }] }
        ]
      })
      const error = yield* Effect.flip(resolveCatalog([p({ name: "ok", kind: "openai", apiKeyEnv: "UNSET_KEY" }), p({ name: "local", kind: "openai-compatible" })], config))
      const paths = error.problems.map((x) => x.path)
      assert.includeMembers(paths, ["providers.0.apiKeyEnv", "providers.1.baseUrl", "gateway.modelGroups.0.deployments.0.provider", "gateway.modelGroups.0.fallbacks.0", "gateway.modelGroups.0.fallbacks.1", "gateway.modelGroups.1.name"])
    }))

  it.effect("providers listing the same model share a group; keys come from Config, Redacted", () =>
    Effect.gen(function* () {
      const catalog = yield* resolveCatalog([
        p({ name: "a", kind: "openai", apiKeyEnv: "A_KEY", models: ["gpt"] }),
        p({ name: "b", kind: "openai-compatible", baseUrl: "http://127.0.0.1:8080/v1/", models: ["gpt", "local"] })
      ], GatewayConfig.make({}))
      assert.deepStrictEqual(catalog.groups.get("gpt")!.deployments.map((d) => d.id), ["a/gpt", "b/gpt"])
      const a = catalog.deployments.find((d) => d.id === "a/gpt")!
      assert.deepInclude(a, { hostname: "api.openai.com", port: 443, basePath: "/v1", protocol: "https:", coolable: true })
      assert.strictEqual(String(Option.getOrThrow(a.key)), "<redacted>")
      assert.deepStrictEqual(catalog.secrets, ["sk-a-key-value"])
      assert.isFalse(catalog.deployments.find((d) => d.id === "b/local")!.coolable)
    }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["A_KEY", "sk-a-key-value"]])))))

  it("the section decodes from YAML-shaped input with defaults, and names bad fields", () => {
    const config = Schema.decodeUnknownSync(GatewayConfig)({})
    assert.deepInclude(config.listen, { socket: true, socketMode: 0o600 })
    assert.strictEqual(config.routing, "weighted-shuffle")
    assert.strictEqual(config.retry.attempts, 3)
    const bad = Schema.decodeUnknownEither(GatewayConfig)({ routing: "random", retry: { attempts: 0 } }, { errors: "all" })
    assert.isTrue(Either.isLeft(bad))
  })
})

describe("settings from the host config", () => {
  it.effect("GatewaySettings.layerHost takes the data dir and providers, and gateway defaults until PynchyConfig has the field", () =>
    Effect.gen(function* () {
      const settings = yield* GatewaySettings
      assert.strictEqual(settings.dataDir, "/tmp/pynchy-gw-host/data")
      assert.deepStrictEqual(settings.providers.map((x) => x.name), ["local"])
      assert.strictEqual(settings.gateway.routing, "weighted-shuffle")
    }).pipe(
      Effect.provide(GatewaySettings.layerHost.pipe(Layer.provide(HostConfig.layerFrom(PynchyConfig.make({
        dataDir: "data",
        providers: [ProviderConfig.make({ name: "local", kind: "openai-compatible", baseUrl: "http://127.0.0.1:1/v1" })]
      }), "/tmp/pynchy-gw-host"))))
    ))
})
