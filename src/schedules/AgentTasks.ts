import { Clock, Context, Effect, Either, Layer, Queue } from "effect"
import { randomUUID } from "node:crypto"
import { HostConfig } from "../config/HostConfig.js"
import { MessageStore } from "../db/MessageStore.js"
import { TaskStore } from "../db/TaskStore.js"
import { ConversationId, WorkspaceId } from "../domain/ids.js"
import { tasksChain, tasksOffered } from "../domain/schedule.js"
import type { Workspace } from "../domain/workspace.js"
import type { ServiceHandler } from "../contracts/plugin.js"
import { Workspaces } from "../pipeline/Workspaces.js"
import { whenOf } from "./summary.js"
import { hostTimeZone, isKnownZone, nextDue, parseCron, type Recurrence, shortestGapMs } from "../domain/due.js"

const CATCH_UP_MS = 3_600_000

interface ScheduleInput {
  readonly prompt: string
  readonly cron?: string
  readonly at?: string
  readonly everySeconds?: number
  readonly timezone?: string
  readonly conversation?: string
  readonly dailyTokens?: number
}

interface CallContext {
  readonly turnId: number
  readonly conversationId: string
}

/** A host action handler with who it is offered to. */
export interface OfferedHandler {
  readonly handler: ServiceHandler
  readonly offered: (workspace: Workspace) => boolean
}

export declare namespace AgentTasks {
  /**
   * The `tasks.schedule`, `tasks.list` and `tasks.cancel` host actions: tasks an agent creates in
   * its own workspace, offered to every workspace that does not say `tasks: false`. A turn
   * started by tasks alone (it answers no one but the scheduler) creates no task unless the
   * workspace says `tasks: { chain: true }`, and then a one-off task only at least
   * `limits.minTaskIntervalSeconds` ahead: a task cannot re-arm itself faster than that floor.
   * Refusals (interval floor, cap, chaining, a bad cron or time, another workspace's conversation
   * or task) are results `{ refused: <reason> }`, so the agent reads why.
   */
  export interface Service {
    readonly handlers: ReadonlyArray<OfferedHandler>
    /** Taken by the scheduler's timer: a task was created or cancelled. */
    readonly changes: Queue.Dequeue<void>
  }
}

export class AgentTasks extends Context.Tag("pynchy/AgentTasks")<AgentTasks, AgentTasks.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config } = yield* HostConfig
    const store = yield* TaskStore
    const messages = yield* MessageStore
    const workspaces = yield* Workspaces
    const changes = yield* Queue.sliding<void>(1)
    const floorMs = config.limits.minTaskIntervalSeconds * 1_000
    const cap = config.limits.maxTasksPerWorkspace
    const refused = (reason: string) => Effect.succeed({ refused: reason })

    const workspaceOf = (conversationId: string) =>
      Effect.map(messages.conversation(ConversationId.make(conversationId)), (c) => (c._tag === "Some" ? c.value : undefined))

    const schedule = (input: ScheduleInput, context: CallContext) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const here = yield* workspaceOf(context.conversationId)
        if (here === undefined) return yield* refused("this turn has no conversation to schedule in")
        const target = input.conversation === undefined ? here : yield* workspaceOf(input.conversation)
        if (target === undefined || target.workspace !== here.workspace) return yield* refused(`conversation '${input.conversation}' is not one of this workspace's`)
        const forms = [input.cron, input.at, input.everySeconds].filter((x) => x !== undefined).length
        if (forms !== 1) return yield* refused("give exactly one of cron, at (an ISO time) or everySeconds")
        const zone = input.timezone ?? hostTimeZone()
        if (!isKnownZone(zone)) return yield* refused(`unknown time zone '${zone}'`)
        let recurrence: Recurrence
        if (input.cron !== undefined) {
          const parsed = parseCron(input.cron, zone)
          if (Either.isLeft(parsed)) return yield* refused(`not a cron expression: ${parsed.left}`)
          recurrence = { _tag: "Cron", cron: parsed.right }
        } else if (input.everySeconds !== undefined) {
          recurrence = { _tag: "Every", anchor: now + input.everySeconds * 1_000, everyMs: input.everySeconds * 1_000 }
        } else {
          const at = Date.parse(input.at!)
          if (Number.isNaN(at)) return yield* refused(`'at' is not an ISO time`)
          if (at <= now) return yield* refused(`'at' is in the past`)
          recurrence = { _tag: "Once", at }
        }
        if (!(yield* store.answersUser(context.turnId))) {
          const workspace = yield* workspaces.get(WorkspaceId.make(here.workspace))
          if (workspace._tag === "None" || !tasksChain(workspace.value)) {
            return yield* refused("this turn was started by a task, and a task's turn cannot create tasks here (the workspace's tasks.chain is false)")
          }
          if (recurrence._tag === "Once" && recurrence.at - now < floorMs) {
            return yield* refused(`a task's turn may schedule a one-off task at least ${floorMs / 1_000}s from now; 'at' is ${Math.round((recurrence.at - now) / 1_000)}s from now (limits.minTaskIntervalSeconds)`)
          }
        }
        const gap = shortestGapMs(recurrence, now)
        if (gap < floorMs) return yield* refused(`runs every ${gap / 1_000}s; the shortest interval allowed is ${floorMs / 1_000}s (limits.minTaskIntervalSeconds)`)
        if ((yield* store.countActive(here.workspace)) >= cap) return yield* refused(`this workspace already has ${cap} active tasks (the cap); cancel one first`)
        const id = `t-${randomUUID().slice(0, 8)}`
        const next = recurrence._tag === "Every" ? recurrence.anchor : nextDue(recurrence, now)
        yield* store.upsert({
          id,
          workspace: here.workspace,
          kind: "task",
          conversationId: target.id,
          connection: target.connection,
          place: target.place,
          prompt: input.prompt,
          cron: input.cron ?? null,
          timezone: input.cron !== undefined ? zone : null,
          everyMs: recurrence._tag === "Every" ? recurrence.everyMs : null,
          anchor: recurrence._tag === "Every" ? recurrence.anchor : null,
          at: recurrence._tag === "Once" ? recurrence.at : null,
          catchUpMs: CATCH_UP_MS,
          notifySkipped: false,
          pauseAfterMs: null,
          dailyTokens: input.dailyTokens ?? null,
          definition: JSON.stringify(input),
          nextDue: next
        }, now)
        yield* Queue.offer(changes, undefined)
        return { id, nextDue: next === null ? null : new Date(next).toISOString(), conversation: target.id }
      })

    const list = (_: unknown, context: CallContext) =>
      Effect.gen(function* () {
        const here = yield* workspaceOf(context.conversationId)
        if (here === undefined) return { tasks: [] }
        const tasks = yield* store.list({ workspace: here.workspace, activeOnly: true })
        return {
          tasks: tasks.filter((t) => t.kind === "task").map((t) => ({
            id: t.id, prompt: t.prompt, when: whenOf(t), conversation: t.conversationId, nextDue: t.nextDue === null ? null : new Date(t.nextDue).toISOString(),
            ...(t.dailyTokens !== null ? { dailyTokens: t.dailyTokens } : {})
          }))
        }
      })

    const cancel = (input: { readonly id: string }, context: CallContext) =>
      Effect.gen(function* () {
        const here = yield* workspaceOf(context.conversationId)
        const task = yield* store.get(input.id)
        if (here === undefined || task._tag === "None" || task.value.kind !== "task" || task.value.workspace !== here.workspace) {
          return yield* refused(`no task '${input.id}' in this workspace`)
        }
        if (!(yield* store.cancel(input.id, yield* Clock.currentTimeMillis, here.workspace))) return yield* refused(`task '${input.id}' is not active`)
        yield* Queue.offer(changes, undefined)
        return { cancelled: input.id }
      })

    const offered = (w: Workspace) => tasksOffered(w)
    const handlers: ReadonlyArray<OfferedHandler> = [
      {
        offered,
        handler: {
          name: "tasks.schedule",
          description: "Schedule a task: a prompt that runs as a turn later, once (`at`, an ISO time) or repeatedly (`cron`, 5 or 6 fields, or `everySeconds`), in this conversation unless `conversation` names another of this workspace's. `dailyTokens` caps what its runs may spend per UTC day (a run due at or over it is skipped).",
          risk: "low",
          inputSchema: {
            type: "object",
            properties: {
              prompt: { type: "string", minLength: 1, maxLength: 4_000 },
              cron: { type: "string" },
              at: { type: "string" },
              everySeconds: { type: "integer", minimum: 1 },
              timezone: { type: "string" },
              conversation: { type: "string" },
              dailyTokens: { type: "integer", minimum: 1 }
            },
            required: ["prompt"],
            additionalProperties: false
          },
          handler: (input: ScheduleInput, context: CallContext) => schedule(input, context)
        }
      },
      {
        offered,
        handler: {
          name: "tasks.list",
          description: "List this workspace's active tasks with their next due time.",
          risk: "low",
          inputSchema: { type: "object", properties: {}, additionalProperties: false },
          handler: (input: unknown, context: CallContext) => list(input, context)
        }
      },
      {
        offered,
        handler: {
          name: "tasks.cancel",
          description: "Cancel one of this workspace's tasks by id.",
          risk: "low",
          inputSchema: { type: "object", properties: { id: { type: "string", minLength: 1 } }, required: ["id"], additionalProperties: false },
          handler: (input: { readonly id: string }, context: CallContext) => cancel(input, context)
        }
      }
    ]
    return AgentTasks.of({ handlers, changes })
  })

  static readonly layer = Layer.effect(AgentTasks, AgentTasks.make)

  /** No task actions (a host or test stack without a task store): nothing is offered, nothing changes. */
  static readonly layerNone = Layer.effect(AgentTasks, Effect.map(Queue.sliding<void>(1), (changes) => AgentTasks.of({ handlers: [], changes })))
}
