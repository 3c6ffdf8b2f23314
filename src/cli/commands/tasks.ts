import { Args, Command, Options } from "@effect/cli"
import { Clock, Console, Effect, Either, Layer } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import * as Database from "../../db/Database.js"
import * as Stores from "../../db/Stores.js"
import { TaskStore } from "../../db/TaskStore.js"
import { wakeHost } from "../../host/ControlSocket.js"
import { runNow } from "../../schedules/runs.js"
import { formatSummary, taskSummaries } from "../../schedules/summary.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))
const id = Args.text({ name: "id" }).pipe(Args.withDescription("The task id (`ws:<workspace>` for a workspace schedule)."))

const database = Layer.provideMerge(Layer.provideMerge(Stores.layer, Database.layer), HostConfig.layer)

const failed = (text: string) => Console.error(text).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))

const list = Command.make("tasks", { json }, ({ json }) =>
  Effect.gen(function* () {
    const config = yield* HostConfig
    if (!Database.mayExist(config)) {
      return yield* json ? Console.log("[]") : Console.log(`no database yet at ${Database.location(config)} (the host has never started here)`)
    }
    const rows = yield* taskSummaries.pipe(Effect.provide(database))
    if (json) return yield* Console.log(JSON.stringify(rows, null, 2))
    if (rows.length === 0) return yield* Console.log("no schedules or tasks")
    for (const r of rows) yield* Console.log(formatSummary(r))
  }).pipe(Effect.provide(HostConfig.layer))
)

const cancel = Command.make("cancel", { id }, ({ id }) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const task = yield* store.get(id)
    if (task._tag === "Some" && task.value.kind === "schedule") return yield* failed(`${id} is a workspace schedule: remove its schedule from pynchy.yaml instead`)
    if (yield* store.cancel(id, yield* Clock.currentTimeMillis)) return yield* Console.log(`cancelled ${id}`)
    return yield* failed(`no active task ${id}`)
  }).pipe(Effect.provide(database))
).pipe(Command.withDescription("Cancel a task an agent created."))

const run = Command.make("run", { id }, ({ id }) =>
  Effect.gen(function* () {
    const { dataDir } = yield* HostConfig
    const queued = yield* runNow(id)
    if (Either.isLeft(queued)) return yield* failed(queued.left)
    const woken = yield* wakeHost(dataDir, queued.right.conversationId)
    yield* Console.log(`queued a run of ${id} in ${queued.right.conversationId}; ${woken ? "the running host was woken" : "no host is running: it runs at the next start"}`)
  }).pipe(Effect.provide(database))
).pipe(Command.withDescription("Run a task or schedule now (one extra run; its schedule is unchanged)."))

/** `pynchy tasks [--json]`, `pynchy tasks cancel <id>`, `pynchy tasks run <id>`. */
export const tasks = list.pipe(
  Command.withDescription("List workspace schedules and agent tasks: next due time, last run and its outcome."),
  Command.withSubcommands([cancel, run])
)
