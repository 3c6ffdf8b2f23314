/**
 * Files out against a hostile agent in a real bwrap sandbox: a core that leaves a symlink to
 * /etc/passwd, a FIFO and an oversized file in /workspace/outbox beside one good file. The turn
 * completes, only the good file is sent, the others are named as not attached, nothing of
 * /etc/passwd is read or stored, and the host answers the next message.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { skipWithout } from "../support/system.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "../sandbox/support.js"
import { filesConfig, filesRuntime } from "./support.js"

const HOSTILE_CORE = `
import * as fs from "node:fs"
import { execFileSync } from "node:child_process"
export default async function hostile(ctx) {
  const text = ctx.turn.messages.map((m) => m.text).join(" ")
  if (text.includes("attack")) {
    fs.mkdirSync("/workspace/outbox", { recursive: true })
    fs.symlinkSync("/etc/passwd", "/workspace/outbox/passwd.txt")
    execFileSync("mkfifo", ["/workspace/outbox/pipe.txt"])
    fs.writeFileSync("/workspace/outbox/huge.txt", Buffer.alloc(2_000, 120))
    fs.writeFileSync("/workspace/outbox/ok.txt", "fine")
  }
  ctx.reply("done: " + text)
}
`

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("a hostile outbox in a bwrap sandbox", () => {
  it.scopedLive("a link to /etc/passwd, a FIFO and an oversized file are neither read nor sent; the turn completes and the host answers on", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const core = path.join(dir, "hostile-core.mjs")
      fs.writeFileSync(core, HOSTILE_CORE, { mode: 0o644 })
      const plugin = path.join(dir, "plugin.mjs")
      fs.writeFileSync(plugin, `export default { name: "hostile-core", agentCore: () => ({ name: "hostile", module: ${JSON.stringify(core)}, api: "none" }) }\n`)
      const cfg = filesConfig(dir, { maxBytes: 1_000 }, { containerRuntime: "bwrap", plugins: { modules: [plugin] }, workspace: { agentCore: "hostile" } })
      const runnerPath = yield* Effect.promise(runnerBundle)
      const runtime = filesRuntime()
      const ctx = yield* Layer.build(makeTestHost(cfg, { runtimes: [runtime.entry], executor: sandboxExecutor(cfg, { runnerPath }) }))
      const conv = ConversationId.make("files:room")
      yield* Effect.promise(() => runtime.context().ingestMessage({ connection: "files", place: "room", providerEventId: "a1", sender: "u", text: "attack" }))
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      const reply = yield* eventually(Effect.sync(() => runtime.sent[0]), { label: "the reply" })
      assert.deepStrictEqual(reply.files?.map((f) => [f.name, new TextDecoder().decode(f.bytes)]), [["ok.txt", "fine"]])
      assert.match(reply.text, /^done: attack/)
      assert.include(reply.text, "huge.txt: too large")
      assert.include(reply.text, "passwd.txt: a symbolic link")
      assert.include(reply.text, "pipe.txt: not a regular file")
      const passwd = fs.readFileSync("/etc/passwd", "utf8").slice(0, 20)
      const stored = yield* Effect.provide(DeliveryStore, ctx).pipe(Effect.flatMap((s) => s.filesOf(reply.idempotencyKey)))
      assert.deepStrictEqual(stored.map((f) => f.name), ["ok.txt"])
      assert.notInclude(JSON.stringify(runtime.sent), passwd)
      // The host goes on: the next message is answered, with nothing attached.
      yield* Effect.promise(() => runtime.context().ingestMessage({ connection: "files", place: "room", providerEventId: "a2", sender: "u", text: "again" }))
      const next = yield* eventually(Effect.sync(() => runtime.sent[1]), { label: "the next reply" })
      assert.strictEqual(next.text, "done: again")
      assert.isUndefined(next.files)
    }))
})
