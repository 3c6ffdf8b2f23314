/**
 * Workspaces from plugins: they join the configured ones and answer the messages routed to them
 * (a whole test host, the scripted executor); an id both declare is a fault naming both sources,
 * unless config turns the plugin's off with `enabled: false`; `pynchy config check` and
 * `pynchy plugins` (the built CLI) see them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig, HostConfig } from "../../src/config/HostConfig.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Workspace } from "../../src/domain/workspace.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { Workspaces } from "../../src/pipeline/Workspaces.js"
import type { BuiltinPlugin } from "../../src/builtins/list.js"
import { joinWorkspaces, routeWorkspaceProblems } from "../../src/plugins/workspaces.js"
import { runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { awaitTurnEnd } from "../sandbox/support.js"

const helperPlugin: BuiltinPlugin = {
  name: "helper-plugin",
  load: async () => ({ name: "helper-plugin", workspaceSpec: () => [{ id: "helper", instructions: "Help." }, { id: "extra", instructions: "More." }] })
}

const configOf = (raw: Record<string, unknown>) => Either.getOrThrow(decodeConfig(raw, "test"))
const contributed = (ids: ReadonlyArray<string>) => ids.map((id) => ({ name: id, plugin: "helper-plugin", source: { _tag: "builtin" } as const, value: Workspace.make({ id: id as never }) }))

describe("plugin workspaces", () => {
  it.scopedLive("a plugin's workspace answers the messages routed to it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const cfg = configOf({
        dataDir: dir,
        workspaces: [{ id: "main" }],
        routes: [{ connection: "test", place: "*", workspace: "helper" }],
        connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } }
      })
      const ctx = yield* Layer.build(makeTestHost(cfg, { plugins: [helperPlugin] }))
      const { config } = yield* Effect.provide(HostConfig, ctx)
      assert.deepStrictEqual(config.workspaces.map((w) => w.id), ["main", "helper", "extra"])
      const workspaces = yield* Effect.provide(Workspaces, ctx)
      assert.strictEqual(Option.getOrThrow(yield* workspaces.get("helper" as never)).instructions, "Help.")
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest({ connection: "test", place: "room", providerEventId: "e1", sender: "u", text: "hi helper" })
      const conv = ConversationId.make("test:room")
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["echo: hi helper"])
      const conversation = yield* Effect.flatMap(MessageStore, (m) => m.conversation(conv)).pipe(Effect.provide(ctx))
      assert.strictEqual(Option.getOrThrow(conversation).workspace, "helper")
    }))

  it("an id in config and a plugin is a fault naming both; enabled: false turns either off; routes must name an enabled workspace", () => {
    const clash = joinWorkspaces(configOf({ workspaces: [{ id: "main" }, { id: "helper" }] }), contributed(["helper"]))
    assert.deepStrictEqual(clash.problems.map((p) => `${p.path}: ${p.reason}`), [
      "workspaces.1.id: workspace 'helper' is declared by config and by plugin 'helper-plugin' (rename one, or write { id: helper, enabled: false } to turn the plugin's off)"
    ])
    const off = configOf({ workspaces: [{ id: "main" }, { id: "helper", enabled: false }, { id: "old", enabled: false }], routes: [{ connection: "cli", place: "*", workspace: "helper" }] })
    const joined = joinWorkspaces(off, contributed(["helper", "extra"]))
    assert.deepStrictEqual(joined.problems, [])
    assert.deepStrictEqual(joined.workspaces.map((w) => w.id), ["main", "extra"])
    assert.deepStrictEqual(routeWorkspaceProblems(off, joined.workspaces).map((p) => `${p.path}: ${p.reason}`), ["routes.0.workspace: unknown workspace 'helper' (declared: main, extra)"])
  })

  it("a plugin's schedule is checked like a configured one, under the plugin's path", () => {
    const scheduled = [{ ...contributed(["daily"])[0]!, value: Workspace.make({ id: "daily" as never, schedule: "0 8 * * *" }) }]
    const { problems } = joinWorkspaces(configOf({}), scheduled)
    assert.deepStrictEqual(problems.map((p) => p.path), ["plugins.helper-plugin.workspaceSpec.daily.scheduledPrompt", "plugins.helper-plugin.workspaceSpec.daily.deliverTo"])
  })

  it("pynchy plugins lists a module's workspaces; pynchy config check accepts routes to them and names a clash", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "ws-plugin.mjs"), "export default { name: 'ws-plugin', workspaceSpec: () => [{ id: 'notes', instructions: 'Keep notes.' }] }\n")
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), "plugins:\n  modules: [./ws-plugin.mjs]\nroutes:\n  - { connection: cli, place: '*', workspace: notes }\n")
    const plugins = await runCli(["plugins"], { cwd: dir })
    assert.match(plugins.stdout, /^ws-plugin {2}\(module .*ws-plugin\.mjs\)\n {2}workspaceSpec {2}notes$/m)
    assert.strictEqual((await runCli(["config", "check"], { cwd: dir })).code, 0)
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), "plugins:\n  modules: [./ws-plugin.mjs]\nworkspaces:\n  - { id: notes }\n")
    const check = await runCli(["config", "check"], { cwd: dir })
    assert.strictEqual(check.code, 1)
    assert.include(check.stderr + check.stdout, "workspaces.0.id: workspace 'notes' is declared by config and by plugin 'ws-plugin'")
  })
})
