/**
 * Inbox retention: the host removes the files it saved into a workspace inbox once they are older
 * than `files.inboxRetentionDays`, and nothing else. A hostile agent in a real bwrap sandbox
 * rebuilds its inbox out of links to host folders and files, a FIFO and folders named like the
 * host's files; the sweep removes links as links, enters no link, blocks on nothing, and every
 * host file survives it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { ConversationId } from "../../src/domain/ids.js"
import { sweepInbox } from "../../src/files/inbox-retention.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { skipWithout } from "../support/system.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "../sandbox/support.js"
import { filesConfig, filesRuntime, recordingAgent } from "./support.js"

const DAY = 86_400_000
const OLD = new Date("2000-01-01T00:00:00Z")
const bytes = (s: string) => new TextEncoder().encode(s)
const exists = (p: string) => fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined

/** A file with the given content and an old modification time. */
const oldFile = (file: string, content = "x") => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
  fs.utimesSync(file, OLD, OLD)
}

describe("inbox retention", () => {
  it.effect("removes the host's old files and temporary files; keeps new ones, the agent's own names and folders", () =>
    Effect.gen(function* () {
      const ws = tempDir()
      const conv = path.join(ws, "inbox", "room-1a2b3c4d")
      oldFile(path.join(conv, "0123456789-1-old.txt"))
      oldFile(path.join(conv, ".0123456789-2-x.png.4242-k3j2.partial"))
      fs.writeFileSync(path.join(conv, "0123456789-3-new.txt"), "new")
      oldFile(path.join(conv, "notes-by-agent.txt"))
      oldFile(path.join(conv, "0123456789-4-folder", "0123456789-1-inside.txt"))
      const empty = path.join(ws, "inbox", "done-00000000")
      oldFile(path.join(empty, "abcdef0123-1-a.pdf"))
      const result = yield* sweepInbox(ws, new Date("2020-01-01").getTime())
      assert.strictEqual(result.removed, 3)
      assert.deepStrictEqual(fs.readdirSync(conv).sort(), ["0123456789-3-new.txt", "0123456789-4-folder", "notes-by-agent.txt"])
      assert.isTrue(exists(path.join(conv, "0123456789-4-folder", "0123456789-1-inside.txt")))
      // A conversation folder left empty goes; one with anything left stays.
      assert.isFalse(exists(empty))
      // No inbox at all is nothing to do.
      assert.deepStrictEqual(yield* sweepInbox(tempDir(), Date.now()), { removed: 0, examined: 0 })
    }))

  it.scopedLive("the host sweeps every workspace at start by `files.inboxRetentionDays`; 0 keeps everything", () =>
    Effect.gen(function* () {
      const run = (days: number) =>
        Effect.gen(function* () {
          const dir = tempDir()
          const inbox = path.join(dir, "workspaces", "main", "inbox", "files-room-00000000")
          oldFile(path.join(inbox, "0123456789-1-old.txt"))
          fs.writeFileSync(path.join(inbox, "0123456789-2-today.txt"), "today")
          fs.utimesSync(path.join(inbox, "0123456789-2-today.txt"), new Date(Date.now() - DAY / 2), new Date(Date.now() - DAY / 2))
          const runtime = filesRuntime()
          yield* Layer.build(makeTestHost(filesConfig(dir, { inboxRetentionDays: days }), { runtimes: [runtime.entry], executor: recordingAgent().layer }))
          return inbox
        })
      // The first sweep is a step of the start: done when the host is built.
      const swept = yield* run(1)
      assert.isFalse(exists(path.join(swept, "0123456789-1-old.txt")))
      assert.isTrue(exists(path.join(swept, "0123456789-2-today.txt")))
      const kept = yield* run(0)
      assert.isTrue(exists(path.join(kept, "0123456789-1-old.txt")))
    }))
})

/**
 * The agent rebuilds `/workspace/inbox`: its conversation folder gets a link named like a host
 * file to a host file, a FIFO and a folder so named; another "conversation" is a link to a host
 * folder full of host-named files. On "swap" the whole inbox becomes a link to a host folder.
 * The host paths come in the message text (the sandbox cannot see them; a link is only a string).
 */
const HOSTILE_CORE = `
import * as fs from "node:fs"
import { execFileSync } from "node:child_process"
export default async function hostile(ctx) {
  const text = ctx.turn.messages.map((m) => m.text).join("\\n")
  const [verb, victimFile, victimDir] = text.split("\\n")[0].split(" ")
  const folder = /\\/workspace\\/inbox\\/([^/]+)\\//.exec(text)?.[1]
  if (verb === "attack" && folder !== undefined) {
    fs.renameSync("/workspace/inbox", "/workspace/inbox-was")
    const conv = "/workspace/inbox/" + folder
    fs.mkdirSync(conv, { recursive: true })
    fs.symlinkSync(victimFile, conv + "/aaaaaaaaaa-1-link.txt")
    execFileSync("mkfifo", [conv + "/bbbbbbbbbb-1-pipe.txt"])
    fs.mkdirSync(conv + "/cccccccccc-1-dir")
    fs.writeFileSync(conv + "/cccccccccc-1-dir/dddddddddd-1-in.txt", "agent's")
    fs.symlinkSync(victimDir, "/workspace/inbox/evil-00000000")
    for (const name of fs.readdirSync(conv)) fs.lutimesSync(conv + "/" + name, new Date(0), new Date(0))
  }
  if (verb === "swap") {
    fs.rmSync("/workspace/inbox", { recursive: true, force: true })
    fs.symlinkSync(victimDir, "/workspace/inbox")
  }
  ctx.reply("done: " + verb)
}
`

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("inbox retention against a hostile agent in a bwrap sandbox", () => {
  it.scopedLive("links are removed as links and never entered, a FIFO blocks nothing, and every host file survives", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      // Host files named and aged like inbox files: the sweep would remove them if it reached them.
      const victims = tempDir()
      const victimFile = path.join(victims, "0123456789-1-secret.txt")
      oldFile(victimFile, "host secret")
      const victimDir = path.join(victims, "folder")
      oldFile(path.join(victimDir, "0123456789-1-a.txt"), "host a")
      oldFile(path.join(victimDir, "conv", "0123456789-1-b.txt"), "host b")
      const core = path.join(dir, "hostile-core.mjs")
      fs.writeFileSync(core, HOSTILE_CORE, { mode: 0o644 })
      const plugin = path.join(dir, "plugin.mjs")
      fs.writeFileSync(plugin, `export default { name: "hostile-core", agentCore: () => ({ name: "hostile", module: ${JSON.stringify(core)}, api: "none" }) }\n`)
      const cfg = filesConfig(dir, { maxBytes: 1_000 }, { containerRuntime: "bwrap", plugins: { modules: [plugin] }, workspace: { agentCore: "hostile" } })
      const runtime = filesRuntime()
      const ctx = yield* Layer.build(makeTestHost(cfg, { runtimes: [runtime.entry], executor: sandboxExecutor(cfg, { runnerPath: yield* Effect.promise(runnerBundle) }) }))
      const workspace = path.join(dir, "workspaces", "main")
      const send = (id: string, text: string, files?: ReadonlyArray<{ name: string; bytes: Uint8Array }>) =>
        Effect.promise(() => runtime.context().ingestMessage({ connection: "files", place: "room", providerEventId: id, sender: "u", text, ...(files ? { files } : {}) }))
      const replies = (n: number) => eventually(Effect.sync(() => (runtime.sent.length >= n ? runtime.sent[n - 1] : undefined)), { label: `reply ${n}` })

      yield* send("a1", `attack ${victimFile} ${victimDir}`, [{ name: "photo.png", bytes: bytes("png") }])
      const turn = yield* awaitTurnEnd(ConversationId.make("files:room")).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      assert.strictEqual((yield* replies(1)).text, "done: attack")
      const conv = fs.readdirSync(path.join(workspace, "inbox")).find((n) => n !== "evil-00000000")!
      const at = (name: string) => path.join(workspace, "inbox", conv, name)
      assert.isTrue(fs.lstatSync(at("aaaaaaaaaa-1-link.txt")).isSymbolicLink(), "the agent planted its link")

      // Everything host-named counts as old: only the walls keep the host's files.
      const first = yield* sweepInbox(workspace, Date.now() + DAY)
      assert.strictEqual(first.removed, 2, "the link and the FIFO, each as itself")
      assert.isFalse(exists(at("aaaaaaaaaa-1-link.txt")))
      assert.isFalse(exists(at("bbbbbbbbbb-1-pipe.txt")))
      assert.strictEqual(fs.readFileSync(at("cccccccccc-1-dir/dddddddddd-1-in.txt"), "utf8"), "agent's")
      assert.isTrue(fs.lstatSync(path.join(workspace, "inbox", "evil-00000000")).isSymbolicLink())
      assert.strictEqual(fs.readFileSync(victimFile, "utf8"), "host secret")
      assert.strictEqual(fs.readFileSync(path.join(victimDir, "0123456789-1-a.txt"), "utf8"), "host a")
      assert.strictEqual(fs.readFileSync(path.join(victimDir, "conv", "0123456789-1-b.txt"), "utf8"), "host b")

      // The whole inbox a link to a host folder: not entered.
      yield* send("a2", `swap ${victimFile} ${victimDir}`)
      assert.strictEqual((yield* replies(2)).text, "done: swap")
      assert.isTrue(fs.lstatSync(path.join(workspace, "inbox")).isSymbolicLink())
      assert.deepStrictEqual(yield* sweepInbox(workspace, Date.now() + DAY), { removed: 0, examined: 0 })
      assert.deepStrictEqual(fs.readdirSync(victimDir).sort(), ["0123456789-1-a.txt", "conv"])
      assert.strictEqual(fs.readFileSync(path.join(victimDir, "conv", "0123456789-1-b.txt"), "utf8"), "host b")

      // The host answers on.
      yield* send("a3", "hello")
      assert.strictEqual((yield* replies(3)).text, "done: hello")
    }))
})
