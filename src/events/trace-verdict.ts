/**
 * What `pynchy trace` concludes from the facts of one message, in one line of plain words, and
 * how it prints the story. The silent cases each have their own code (docs/observability.md).
 */
import type { HostEvent } from "./HostEvent.js"
import type { TraceFacts, Trace } from "./trace.js"

export interface Verdict {
  readonly code:
    | "no_route"
    | "route_disabled"
    | "waiting_for_host"
    | "queued_behind_turn"
    | "turn_running"
    | "retry_scheduled"
    | "approval_waiting"
    | "budget_exceeded"
    | "turn_failed"
    | "turn_interrupted"
    | "delivery_unknown"
    | "delivery_failed"
    | "channel_not_ready"
    | "delivery_pending"
    | "blocked"
    | "quiet"
    | "answered"
  readonly text: string
}

const time = (ms: number) => new Date(ms).toISOString()

/** What to do about a turn that failed with this code. */
export const adviceFor = (code: string): string => {
  switch (code) {
    case "turn_timeout":
      return "the agent did not answer within the workspace's sandbox.timeoutSeconds: raise it, or ask for less"
    case "unknown_workspace":
      return "the route names a workspace that is not configured: add it under workspaces: or fix the route"
    case "unknown_conversation":
      return "the conversation row is gone: send the message again"
    case "unknown_agent_core":
      return "the workspace's agentCore names no core this host has: fix agentCore or install the plugin that brings it"
    case "runner_missing":
      return "the runner bundle is missing: run npm run build"
    case "sandbox_start_failed":
    case "sandbox_unavailable":
      return "the container runtime could not start a sandbox: run pynchy doctor"
    case "workspace_folder_unsafe":
      return "the workspace's folder cannot be used: fix its folder: setting"
    case "too_many_replies":
      return "the agent sent more replies than limits.maxRepliesPerTurn allows: raise it or change the instructions"
    case "ipc_failed":
    case "ipc_closed":
    case "sandbox_exited":
      return "the runner stopped mid-turn: read outcome.json and the session folder of the turn's sandbox, then send the message again"
    case "upstream_error":
    case "timeout":
    case "overloaded_error":
      return "`pynchy doctor` probes each provider; send the message again once it answers"
    case "executor_defect":
      return "a bug in the executor: the host log has the defect; send the message again"
    default:
      return "the host log has the reason; send the message again once it is fixed"
  }
}

export const verdictOf = (f: TraceFacts): Verdict => {
  if (f.message === null) {
    const r = f.noRoute!
    return r.disabled
      ? { code: "route_disabled", text: `route disabled: the route for connection '${r.connection}' place '${r.place}' has enabled: false, so the message was refused (enable it in pynchy.yaml routes:)` }
      : { code: "no_route", text: `no route: no route covers connection '${r.connection}' place '${r.place}', so the message was refused (add one to pynchy.yaml routes:, e.g. { connection: ${r.connection}, place: "${r.place}", workspace: main })` }
  }
  const t = f.turn
  if (t === null) {
    if (f.ahead !== null) {
      return { code: "queued_behind_turn", text: `still queued behind turn ${f.ahead.id} (${f.ahead.status}, attempt ${f.ahead.attempts}): it is taken when that turn ends` }
    }
    return f.hostRunning
      ? { code: "waiting_for_host", text: "waiting for a turn: the host has not taken it yet (pynchy status shows the queue)" }
      : { code: "waiting_for_host", text: "waiting for a turn: no host is running on this database (pynchy start takes it)" }
  }
  const budget = [...f.events].reverse().find((e): e is Extract<HostEvent, { type: "gateway.budget_exceeded" }> => e.type === "gateway.budget_exceeded")
  const sentReply = f.deliveries.some((d) => d.kind === "reply" && d.status === "sent")
  if (t.status === "running" || t.status === "queued") {
    const waiting = f.approvals.find((a) => a.status === "pending")
    if (waiting !== undefined) {
      return { code: "approval_waiting", text: `approval waiting: turn ${t.id} wants to run ${waiting.action}; reply \`approve ${waiting.code}\` or \`deny ${waiting.code}\` in the conversation before ${time(waiting.expiresAt)}` }
    }
    if (t.status === "queued") {
      return { code: "retry_scheduled", text: `turn ${t.id} failed attempt ${t.attempts} (${t.error ?? "no reason"}) and tries again at ${time(t.notBefore)}` }
    }
    return { code: "turn_running", text: `turn ${t.id} is running (attempt ${t.attempts}, since ${time(t.updatedAt)})` }
  }
  if (budget !== undefined && !sentReply) {
    return { code: "budget_exceeded", text: `budget used up: ${budget.message}` }
  }
  if (t.status === "failed") {
    const code = (t.error ?? "unknown").split(":")[0]!
    // The failure's own words (the gateway names an unreachable provider and why) come before the advice.
    const reason = (t.error ?? "").slice(code.length + 1).trim()
    return { code: "turn_failed", text: `turn ${t.id} failed (${code}) after ${t.attempts} attempt(s)${reason !== "" ? `: ${reason}` : ""}; ${adviceFor(code)}` }
  }
  if (t.status === "interrupted") {
    return { code: "turn_interrupted", text: `turn ${t.id} was interrupted by a restart: it runs again when the host starts` }
  }
  const unknown = f.deliveries.find((d) => d.status === "unknown")
  if (unknown !== undefined) {
    return { code: "delivery_unknown", text: `delivery unknown: reply ${unknown.idempotencyKey} may or may not have arrived (${unknown.error ?? "no answer"}); the conversation was told` }
  }
  const failed = f.deliveries.find((d) => d.status === "failed")
  if (failed !== undefined) {
    return { code: "delivery_failed", text: `delivery failed: the channel refused ${failed.idempotencyKey} (${failed.error ?? "no reason"})` }
  }
  const pending = f.deliveries.find((d) => d.status === "pending")
  if (pending !== undefined) {
    const connection = f.message.connection
    if (f.channelReady !== null && !f.channelReady.ready) {
      return { code: "channel_not_ready", text: `channel not ready: the '${connection}' runtime reported not ready at ${time(f.channelReady.since)}; ${pending.idempotencyKey} goes out when it is ready again` }
    }
    return f.hostRunning
      ? { code: "delivery_pending", text: `delivery pending: ${pending.idempotencyKey} waits for the '${connection}' channel` }
      : { code: "delivery_pending", text: `delivery pending: ${pending.idempotencyKey} goes out when the host starts` }
  }
  if (t.status === "blocked") {
    return { code: "blocked", text: `turn ${t.id} ended waiting on a human (${t.error ?? "needs_input"}): answer in the conversation` }
  }
  if (!sentReply) return { code: "quiet", text: `turn ${t.id} completed without a reply` }
  return { code: "answered", text: `answered: ${f.deliveries.filter((d) => d.kind === "reply" && d.status === "sent").length} reply(ies) sent by turn ${t.id}` }
}

/** One event in a line, without `type`, `at` and the ids the story already names. */
export const describe = (e: HostEvent): string => {
  switch (e.type) {
    case "message.ingested":
      return `received from ${e.connection}/${e.place} (event ${e.providerEventId}), routed to workspace ${e.workspace}`
    case "message.deduplicated":
      return `the same platform event came again${e.conflict ? " with other content (refused)" : ""}`
    case "message.no_route":
      return `refused: no ${e.disabled ? "enabled " : ""}route for ${e.connection}/${e.place} (event ${e.providerEventId})`
    case "turn.queued":
      return e.running ? "queued behind the conversation's running turn" : "queued"
    case "turn.started":
      return `turn ${e.turnId} attempt ${e.attempt} started on ${e.executor}${e.adopted ? " (adopted after a restart)" : ""}`
    case "turn.retried":
      return `turn ${e.turnId} attempt ${e.attempt} failed (${e.code}); again at ${time(e.notBefore)}`
    case "turn.failed":
      return `turn ${e.turnId} failed (${e.code}) at attempt ${e.attempt}`
    case "turn.completed":
      return `turn ${e.turnId} completed (${e.code})`
    case "sandbox.started":
      return `sandbox started (${e.runtime}, ${e.executor})`
    case "sandbox.exited":
      return `sandbox ${e.status}${e.code === null ? "" : ` (${e.code})`} after ${Math.round(e.durationMs)} ms`
    case "gateway.call":
      return `gateway call ${e.model} via ${e.deployment}: ${e.status} ${e.outcome}, ${e.totalTokens} tokens, ${Math.round(e.latencyMs)} ms, ${e.retries} retries`
    case "gateway.budget_exceeded":
      return `budget refused a call: ${e.message}`
    case "gateway.cooldown":
      return `deployment ${e.deployment} cooling down until ${time(e.until)} (${e.reason})`
    case "delivery.recorded":
      return `${e.kind} ${e.idempotencyKey} recorded`
    case "delivery.sent":
      return `${e.kind} ${e.idempotencyKey} sent (attempt ${e.attempt})`
    case "delivery.failed":
      return `${e.kind} ${e.idempotencyKey} failed: ${e.reason}`
    case "delivery.unknown":
      return `${e.kind} ${e.idempotencyKey} unknown: ${e.reason}`
    case "approval.asked":
      return `approval ${e.code} asked for ${e.action} (${e.risk} risk)`
    case "approval.decided":
      return `approval ${e.code} ${e.status}`
    case "runtime.ready":
    case "runtime.unready":
      return `runtime ${e.runtime} ${e.type === "runtime.ready" ? "ready" : "not ready"}`
    case "schedule.run":
      return `scheduled task ${e.taskId} ran`
    case "schedule.skipped":
      return `scheduled task ${e.taskId} skipped (${e.reason})`
    case "memory.summary_failed":
      return `history summary failed (${e.code})`
  }
}

/** The story as lines of text, the verdict last. */
export const render = (t: Trace): ReadonlyArray<string> => {
  const lines: Array<string> = []
  if (t.message !== null) {
    const m = t.message
    lines.push(`message ${m.id} in ${m.conversationId} (workspace ${m.workspace}), platform event ${m.providerEventId ?? "-"}, received ${time(m.receivedAt)}`)
  }
  if (t.turn !== null) lines.push(`turn ${t.turn.id}: ${t.turn.status}, ${t.turn.attempts} attempt(s)${t.turn.error === null ? "" : `, ${t.turn.error}`}`)
  for (const d of t.deliveries) lines.push(`delivery ${d.idempotencyKey} (${d.kind}): ${d.status}, ${d.attempts} attempt(s)${d.error === null ? "" : `, ${d.error}`}`)
  for (const a of t.approvals) lines.push(`approval ${a.code} for ${a.action}: ${a.status}`)
  for (const e of t.events) lines.push(`  ${time(e.at)}  ${e.type.padEnd(23)} ${describe(e)}`)
  lines.push(`verdict: ${t.verdict.text}`)
  return lines
}
