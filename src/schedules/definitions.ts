import { Either } from "effect"
import { conversationIdOf, type WorkspaceId } from "../domain/ids.js"
import type { ScheduledTask } from "../domain/task.js"
import type { Workspace } from "../domain/workspace.js"
import type { NewTask } from "../db/TaskStore.js"
import { parseDeliverTo } from "../config/schedules.js"
import { hostTimeZone, nextDue, parseCron, parseWindow, type Recurrence } from "../domain/due.js"

/** The row id of a workspace's schedule. */
export const scheduleIdOf = (workspace: string) => `ws:${workspace}`

/** How a stored task recurs. A stored cron was checked when it was written. */
export const recurrenceOf = (t: Pick<ScheduledTask, "cron" | "timezone" | "everyMs" | "anchor" | "at">): Recurrence => {
  if (t.cron !== null) return { _tag: "Cron", cron: Either.getOrThrow(parseCron(t.cron, t.timezone ?? hostTimeZone())) }
  if (t.everyMs !== null) return { _tag: "Every", anchor: t.anchor ?? 0, everyMs: t.everyMs }
  return { _tag: "Once", at: t.at ?? 0 }
}

/** A scheduled workspace as its task row, due next after `now` (the config was checked). */
export const scheduleRowOf = (w: Workspace & { readonly schedule: string }, now: number): NewTask => {
  const { connection, place } = parseDeliverTo(w.deliverTo ?? "cli:schedule")
  const timezone = w.timezone ?? hostTimeZone()
  const definition = JSON.stringify([w.schedule, timezone, w.scheduledPrompt, w.deliverTo, w.catchUpWindow, w.notifySkipped, w.pauseAfterIdleDays, w.scheduleDailyTokens ?? null])
  return {
    id: scheduleIdOf(w.id),
    workspace: w.id as WorkspaceId,
    kind: "schedule",
    conversationId: conversationIdOf(connection, place),
    connection,
    place,
    prompt: w.scheduledPrompt ?? "",
    cron: w.schedule,
    timezone,
    everyMs: null,
    anchor: null,
    at: null,
    catchUpMs: parseWindow(w.catchUpWindow) ?? 3_600_000,
    notifySkipped: w.notifySkipped,
    pauseAfterMs: w.pauseAfterIdleDays * 86_400_000,
    dailyTokens: w.scheduleDailyTokens ?? null,
    definition,
    nextDue: nextDue({ _tag: "Cron", cron: Either.getOrThrow(parseCron(w.schedule, timezone)) }, now)
  }
}
