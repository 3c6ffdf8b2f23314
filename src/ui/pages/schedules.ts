import type { ScheduledTask, TaskRun } from "../../domain/task.js"
import { type Html, html, time } from "../html.js"

const every = (t: ScheduledTask) =>
  t.cron !== null ? `cron ${t.cron}${t.timezone !== null ? ` (${t.timezone})` : ""}` : t.everyMs !== null ? `every ${Math.round(t.everyMs / 1000)} s` : t.at !== null ? `once at ${time(t.at)}` : "—"

export const schedulesBody = (tasks: ReadonlyArray<{ readonly task: ScheduledTask; readonly last: TaskRun | undefined }>): Html => html`<h1>Schedules and tasks</h1>
${tasks.length === 0 ? html`<p>No schedule or task. Workspaces get one with <code>schedule:</code>; agents create tasks (docs/schedules.md).</p>` : html`<table><thead><tr><th>Id</th><th>Kind</th><th>Workspace</th><th>When</th><th>Status</th><th>Next due</th><th>Last run</th><th>Prompt</th></tr></thead><tbody>
${tasks.map(({ last, task: t }) => html`<tr><td><code>${t.id}</code></td><td>${t.kind}</td><td>${t.workspace}</td><td>${every(t)}</td><td>${t.pausedAt !== null ? "paused" : t.status}</td>
<td>${time(t.nextDue)}</td><td>${last !== undefined ? `${time(last.dueAt)}: ${last.outcome}` : "—"}</td><td class="text">${t.prompt}</td></tr>`)}
</tbody></table>`}`
