/**
 * Gateway keys for the user's own tools, end to end: the real host (`pynchy start`, built CLI) in
 * front of llama-server, a key made by `pynchy keys create`, the official `openai` and
 * `@anthropic-ai/sdk` clients on the loopback port, a plain request on the gateway socket, the
 * key's model scope and daily budget, its usage under its name, and `pynchy keys revoke`
 * refusing it at once in the running host.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as http from "node:http"
import * as path from "node:path"
import OpenAI from "openai"
import { type HostProcess, type HostProject, hostProject, stopHost } from "../channels/host-process.js"
import { type Llama, skipWithoutSidRoot, startLlama } from "../support/llama.js"
import { eventually } from "../support/eventually.js"
import { freePort } from "../support/synapse.js"

const skip = skipWithoutSidRoot()

/** A chat request over the gateway's unix socket (no SDK speaks unix sockets without help). */
const overSocket = (socketPath: string, key: string) =>
  new Promise<number>((resolve, reject) => {
    const body = JSON.stringify({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: "hi" }] })
    const req = http.request({ socketPath, path: "/v1/chat/completions", method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode ?? 0))
    })
    req.on("error", reject)
    req.end(body)
  })

const created = async (project: HostProject, args: ReadonlyArray<string>) => {
  const r = await project.cli(["keys", "create", ...args])
  assert.strictEqual(r.code, 0, r.stderr)
  const key = r.stdout.trim()
  assert.match(key, /^pgk_[A-Za-z0-9_-]{43}$/)
  return key
}

describe.skipIf(skip)("gateway keys (pynchy keys) with the official SDKs against llama-server", () => {
  let scope: Scope.CloseableScope
  let llama: Llama
  let host: HostProcess
  let project: HostProject
  let port: number

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    llama = await Effect.runPromise(Scope.extend(startLlama, scope))
    port = await freePort()
    project = hostProject({
      yaml: () => [
        "containerRuntime: process",
        "providers:",
        `  - { name: llama, kind: openai-compatible, baseUrl: "${llama.baseUrl}", models: [tiny] }`,
        "gateway:",
        `  listen: { socket: true, port: ${port} }`
      ],
      env: { PYNCHY_EXECUTOR: "scripted" }
    })
    host = await project.start()
  }, 120_000)

  afterAll(async () => {
    if (host !== undefined) await stopHost(host)
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  it("a key made by `pynchy keys create` works with the OpenAI SDK on the loopback port, and is refused once revoked", async () => {
    const key = await created(project, ["--name", "laptop"])
    const openai = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 })
    const chat = await openai.chat.completions.create({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: "hello" }] })
    assert.strictEqual(chat.object, "chat.completion")
    const models = await openai.models.list()
    assert.deepStrictEqual(models.data.map((m) => m.id), ["tiny"])
    const stream = await openai.chat.completions.create({ model: "tiny", max_tokens: 4, stream: true, messages: [{ role: "user", content: "hello" }] })
    let chunks = 0
    for await (const _ of stream) chunks++
    assert.isAbove(chunks, 0)

    // Only the digest is stored.
    const rows = project.query("SELECT name, digest FROM gateway_keys")
    assert.deepStrictEqual(rows.map((r) => r.name), ["laptop"])
    assert.notInclude(JSON.stringify(rows), key)

    const revoked = await project.cli(["keys", "revoke", "laptop"])
    assert.strictEqual(revoked.code, 0, revoked.stderr)
    assert.include(revoked.stdout, "the running host refuses it now")
    const refused = await openai.chat.completions.create({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: "hello" }] }).then(
      () => undefined,
      (e: unknown) => e
    )
    assert.instanceOf(refused, OpenAI.AuthenticationError)
  }, 120_000)

  it("the Anthropic SDK on the loopback port and a plain request on the gateway socket", async () => {
    const key = await created(project, ["--name", "tools"])
    const anthropic = new Anthropic({ apiKey: key, baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 })
    const message = await anthropic.messages.create({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: "hello" }] })
    assert.strictEqual(message.type, "message")
    assert.strictEqual(await overSocket(path.join(project.dir, "gateway.sock"), key), 200)
  }, 120_000)

  it("a key is held to its models and its daily budget, and its usage shows under its name", async () => {
    const scoped = await created(project, ["--name", "scoped", "--models", "other-model"])
    const openai = new OpenAI({ apiKey: scoped, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 })
    const denied = await openai.chat.completions.create({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: "x" }] }).then(() => undefined, (e: unknown) => e)
    assert.instanceOf(denied, OpenAI.PermissionDeniedError)

    // A budget smaller than one request's reservation (its max_tokens plus an input estimate).
    const small = await created(project, ["--name", "small", "--daily-tokens", "10"])
    const client = new OpenAI({ apiKey: small, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 })
    const over = await client.chat.completions.create({ model: "tiny", max_tokens: 64, messages: [{ role: "user", content: "x" }] }).then(() => undefined, (e: unknown) => e)
    assert.instanceOf(over, OpenAI.RateLimitError)
    assert.include((over as InstanceType<typeof OpenAI.RateLimitError>).message, "key 'small'")

    const list = await project.cli(["keys", "list"])
    assert.match(list.stdout, /^scoped {2}models: other-model {2}daily tokens: unlimited {2}never expires/m)
    assert.match(list.stdout, /^small {2}models: all {2}daily tokens: 10 /m)
    assert.notInclude(list.stdout, small)

    // Usage events are batched into the events table: wait for the laptop key's (first test).
    const usage = () => project.query("SELECT json_extract(payload, '$.workspace') AS account FROM events WHERE type = 'gateway.call'").map((r) => r.account)
    await Effect.runPromise(eventually(() => (usage().includes("key:laptop") ? true : undefined), { label: "usage under key:laptop" }))
  }, 120_000)
})
