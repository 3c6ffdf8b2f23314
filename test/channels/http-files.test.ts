/**
 * Files over the HTTP API on 127.0.0.1, in a test host with SQLite: a posted file (base64) lands
 * in the workspace inbox and the agent reads its /workspace path; a file over `files:` is answered
 * 413 or 400 naming it; a reply carrying the agent's outbox lists its files, each served at
 * `/replies/{id}/files/{n}` to the token the reply is for only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { makeHttpRuntime } from "../../src/channels/http/HttpRuntime.js"
import { decodeHttpSettings, hashToken } from "../../src/channels/http/settings.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { filesConfig, recordingAgent } from "../files/support.js"

const TOKEN = "files-token"
const OTHER = "other-token"

const withHost = Effect.gen(function* () {
  const dir = tempDir()
  const cfg = filesConfig(dir, { maxBytes: 1_000, maxFiles: 2 }, { routes: [{ connection: "web", place: "*", workspace: "main" }] })
  const outbox = path.join(dir, "workspaces", "main", "outbox")
  const agent = recordingAgent((text) => {
    if (!text.startsWith("make")) return
    fs.mkdirSync(outbox, { recursive: true })
    fs.writeFileSync(path.join(outbox, "summary.txt"), "the summary")
  })
  const runtime = makeHttpRuntime({ name: "web", settings: decodeHttpSettings("web", { kind: "http", port: 0, tokens: [hashToken(TOKEN), hashToken(OTHER)] }), dataDir: tempDir(), files: cfg.files })
  yield* Layer.build(makeTestHost(cfg, { runtimes: [{ plugin: "http", value: runtime }], executor: agent.layer }))
  return { base: `http://127.0.0.1:${runtime.port()}`, agent, workspace: path.join(dir, "workspaces", "main") }
})

const call = (url: string, init: RequestInit & { token?: string } = {}) =>
  Effect.promise(async () => {
    const { token = TOKEN, ...rest } = init
    const res = await fetch(url, { ...rest, headers: { ...(rest.headers as Record<string, string>), authorization: `Bearer ${token}` } })
    const bytes = new Uint8Array(await res.arrayBuffer())
    const type = res.headers.get("content-type") ?? ""
    return { status: res.status, type, bytes, body: type.includes("json") ? JSON.parse(new TextDecoder().decode(bytes)) : undefined }
  })

const post = (base: string, place: string, body: unknown) =>
  call(`${base}/v1/conversations/${place}/messages`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64")

interface Reply { readonly id: number; readonly text: string; readonly files?: Array<{ name: string; type: string; url: string }> }

describe("files over the HTTP API", () => {
  it.scopedLive("a posted file is in the inbox and named to the agent; a reply's files are listed and served to its token only", () =>
    Effect.gen(function* () {
      const { agent, base, workspace } = yield* withHost
      const posted = yield* post(base, "room", { text: "make a summary", files: [{ name: "notes.txt", type: "text/plain", base64: b64("my notes") }] })
      assert.strictEqual(posted.status, 202)
      const input = yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      const match = /\[file: (\/workspace\/inbox\/\S+notes\.txt) \(text\/plain, 8 bytes\)\]/.exec(input)
      assert.isNotNull(match, input)
      assert.strictEqual(fs.readFileSync(path.join(workspace, match![1]!.slice("/workspace/".length)), "utf8"), "my notes")
      const [reply] = yield* eventually(
        Effect.map(call(`${base}/v1/conversations/room/replies`), (r) => (r.body.replies.length > 0 ? (r.body.replies as Array<Reply>) : undefined)),
        { label: "the reply" }
      )
      assert.deepStrictEqual(reply!.files?.map((f) => [f.name, f.type]), [["summary.txt", "text/plain"]])
      assert.strictEqual(reply!.files![0]!.url, `/v1/conversations/room/replies/${reply!.id}/files/1`)
      const got = yield* call(`${base}${reply!.files![0]!.url}`)
      assert.strictEqual(got.status, 200)
      assert.strictEqual(got.type, "text/plain")
      assert.strictEqual(new TextDecoder().decode(got.bytes), "the summary")
      // Another token: the place is the first token's (403 place_owned; in a shared place, 404: the reply is not its own).
      assert.strictEqual((yield* call(`${base}${reply!.files![0]!.url}`, { token: OTHER })).status, 403)
      // A file number past the reply's is not found.
      assert.strictEqual((yield* call(`${base}/v1/conversations/room/replies/${reply!.id}/files/2`)).status, 404)
    }))

  it.scopedLive("a file over the limits is refused naming it, and nothing is stored", () =>
    Effect.gen(function* () {
      const { agent, base } = yield* withHost
      const big = yield* post(base, "room", { text: "hi", files: [{ name: "ok.txt", base64: b64("x") }, { name: "big.pdf", type: "application/pdf", base64: b64(new Uint8Array(1_001)) }] })
      assert.strictEqual(big.status, 413)
      assert.strictEqual(big.body.error, "file_too_large")
      assert.deepStrictEqual(big.body.problems[0].path, "body.files.1")
      assert.match(big.body.problems[0].reason, /^big\.pdf: too large/)
      const exe = yield* post(base, "room", { text: "hi", files: [{ name: "../run.exe", type: "application/x-msdownload", base64: b64("MZ") }] })
      assert.strictEqual(exe.status, 400)
      assert.strictEqual(exe.body.error, "file_type_not_allowed")
      assert.match(exe.body.problems[0].reason, /^run\.exe: type not allowed/)
      const many = yield* post(base, "room", { text: "hi", files: ["a", "b", "c"].map((n) => ({ name: `${n}.txt`, base64: b64(n) })) })
      assert.strictEqual(many.status, 400)
      assert.strictEqual(many.body.error, "too_many_files")
      const bad = yield* post(base, "room", { text: "hi", files: [{ name: "a.txt", base64: "not base64!" }] })
      assert.strictEqual(bad.status, 400)
      assert.include(bad.body.problems.map((p: { path: string }) => p.path), "body.files.0.base64")
      // None of them became a message: the agent never ran.
      const ok = yield* post(base, "room", { text: "after" })
      assert.strictEqual(ok.status, 202)
      yield* eventually(Effect.sync(() => agent.inputs[0]), { label: "the agent's input" })
      assert.deepStrictEqual(agent.inputs, ["after"])
    }))
})
