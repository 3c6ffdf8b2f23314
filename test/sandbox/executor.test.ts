/** The sandbox executor on its own: skills per workspace, liveness by executor id, the sandbox killed when the turn's scope closes. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { ConversationId, ExecutorId, WorkspaceId } from "../../src/domain/ids.js"
import { Workspace } from "../../src/domain/workspace.js"
import { AgentExecutor, ExecutorLiveness, type TurnInput } from "../../src/pipeline/AgentExecutor.js"
import type { BuiltinPlugin } from "../../src/builtins/list.js"
import { tempDir } from "../support/db.js"
import { skipWithout } from "../support/system.js"
import { bareSandboxExecutor, runnerBundle } from "./support.js"
import { turnInput } from "../support/turn-input.js"
import { eventually } from "../support/eventually.js"

const skillFolder = (root: string, name: string, tier: string) => {
  const dir = path.join(root, name)
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "SKILL.md"), `---\nname: ${name}\ndescription: the ${name} skill\ntier: ${tier}\n---\nUse ${name}.\n`)
  return dir
}

const inputFor = (executor: ExecutorId, workspace: Workspace, texts: ReadonlyArray<string>, replies: Array<string>): TurnInput =>
  turnInput({ executor, workspace, messages: texts, replies })

const executorFor = (dir: string, runnerPath: string, plugins: ReadonlyArray<BuiltinPlugin> = []) =>
  bareSandboxExecutor(Either.getOrThrow(decodeConfig({ dataDir: dir }, "test")), { runnerPath, defaultCore: "scripted" }, plugins)

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("sandbox executor", () => {
  it.scopedLive("skills: the core tier always, others when the workspace lists them, the workspace's own", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const skillsRoot = tempDir("pynchy-skills-")
      const plugin: BuiltinPlugin = {
        name: "test-skills",
        load: async () => ({ name: "test-skills", skillPaths: () => [skillFolder(skillsRoot, "extra-a", "standard"), skillFolder(skillsRoot, "extra-b", "standard")] })
      }
      const workspace = Workspace.make({ id: WorkspaceId.make("main"), skills: ["extra-a"] })
      skillFolder(path.join(dir, "workspaces", "main", "skills"), "local-one", "standard")
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(executorFor(dir, runnerPath, [plugin]))
      const { allocate, execute } = yield* Effect.provide(AgentExecutor, ctx)
      const id = yield* allocate(ConversationId.make("test:room"))
      const replies: Array<string> = []
      yield* execute(inputFor(id, workspace, ["hi"], replies))
      assert.deepStrictEqual(replies, ["echo: hi"])
      const turn = JSON.parse(fs.readFileSync(path.join(dir, "sandboxes", id.slice("sandbox:".length), "turn.json"), "utf8"))
      assert.deepStrictEqual(turn.skills.map((s: { name: string }) => s.name), ["core", "extra-a", "local-one"])
      assert.notInclude(JSON.stringify(turn), "PYNCHY_TURN_TOKEN")
    }))

  it.scopedLive("alive by executor id while the turn runs; killed when the turn's scope closes", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(executorFor(dir, runnerPath))
      const { allocate, execute } = yield* Effect.provide(AgentExecutor, ctx)
      const liveness = yield* Effect.provide(ExecutorLiveness, ctx)
      const id = yield* allocate(ConversationId.make("test:room"))
      assert.isFalse(yield* liveness.isAlive(id))
      const fiber = yield* Effect.fork(execute(inputFor(id, Workspace.make({ id: WorkspaceId.make("main") }), ["!hang"], [])))
      const record = path.join(dir, "sandboxes", id.slice("sandbox:".length), "sandbox.json")
      yield* eventually(() => fs.existsSync(record) || undefined, { label: "the sandbox's liveness record" })
      assert.isTrue(yield* liveness.isAlive(id))
      yield* Fiber.interrupt(fiber)
      assert.isFalse(yield* liveness.isAlive(id))
      assert.isFalse(yield* liveness.isAlive(ExecutorId.make("sandbox:000000000000")))
      assert.isFalse(yield* liveness.isAlive(ExecutorId.make("inproc:whatever")))
    }))
})
