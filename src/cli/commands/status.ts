import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import { HostStore } from "../../db/HostStore.js"
import { TurnStore } from "../../db/TurnStore.js"
import { TurnStatus } from "../../domain/turn.js"
import * as Cluster from "../../cluster/Cluster.js"
import { ClusterStore, type ClusterView } from "../../cluster/ClusterStore.js"
import * as Database from "../../db/Database.js"
import * as Stores from "../../db/Stores.js"
import { readStatusFile } from "../../host/status-file.js"
import { PluginRegistry } from "../../plugins/PluginRegistry.js"
import { detectTunnels, publicUrl, type TunnelReport } from "../../tunnels/detect.js"
import { formatSummary, taskSummaries } from "../../schedules/summary.js"
import { AttachmentStore } from "../../runtimes/agent-session/AttachmentStore.js"
import { attachmentLine } from "../../runtimes/agent-session/attachment-status.js"
import { BUILTINS } from "../../builtins/list.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))

const time = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString())

/** The tunnels of the plugins, detected now; plugins that do not load give none. */
const tunnels = Effect.flatMap(PluginRegistry, (r) => detectTunnels(r.tunnels)).pipe(
  Effect.provide(PluginRegistry.layerWith({ builtins: BUILTINS })),
  Effect.catchAll(() => Effect.succeed<ReadonlyArray<TunnelReport>>([]))
)

const tunnelLine = (reports: ReadonlyArray<TunnelReport>) => {
  const url = publicUrl(reports)
  return url !== undefined
    ? `tunnel    ${url.url} (${url.name}: ${url.detail})`
    : `tunnel    none${reports.length > 0 ? ` (${reports.map((r) => `${r.name}: ${r.detail}`).join("; ")})` : ""}`
}

/** The runners, their shard counts, and which runner holds each connection (a runner whose heartbeat is older than the lock expiration is gone). */
const clusterLines = (view: ClusterView, expirationMs: number): ReadonlyArray<string> => {
  const shards = new Map(view.shards.map((s) => [s.address, s.shards]))
  const live = new Set(view.runners.filter((r) => r.heartbeatAgeMs < expirationMs).map((r) => r.address))
  return [
    ...view.runners.map((r) =>
      `cluster   runner ${r.address}: ${live.has(r.address) ? (r.healthy ? "live" : "live, unhealthy") : "GONE"}, ${shards.get(r.address) ?? 0} shards, heartbeat ${Math.round(r.heartbeatAgeMs / 1000)} s ago`),
    ...view.connections.map((c) =>
      `cluster   connection ${c.connection} on ${c.runner}${live.has(c.runner) ? "" : " (GONE: moves when a live runner takes its shard)"} since ${time(c.since)}`),
    ...(view.runners.length === 0 ? ["cluster   no runner registered yet"] : [])
  ]
}

/** Reads the database (and the running host's status file) and detects tunnels, without starting anything. */
export const status = Command.make("status", { json }, ({ json }) =>
  Effect.gen(function* () {
    const config = yield* HostConfig
    const reports = yield* tunnels
    if (!Database.mayExist(config)) {
      if (!json) yield* Console.log(tunnelLine(reports))
      return yield* Console.log(`no database yet at ${Database.location(config)} (the host has never started here)`)
    }
    const host = yield* HostStore
    const counts = yield* host.tableCounts
    const last = yield* host.lastRun
    const live = readStatusFile(config.dataDir)
    const schedules = yield* taskSummaries
    const attachments = yield* Effect.flatMap(AttachmentStore, (s) => s.currents)
    const turnStore = yield* TurnStore
    const turnCounts = yield* turnStore.countByStatus
    // Conversations whose last turn was left waiting on a human (a delegated session's question).
    const blocked = yield* turnStore.latestBlocked(20)
    const cursors = yield* host.cursors
    const cluster = Cluster.isClustered(config) ? yield* Effect.flatMap(ClusterStore, (s) => s.view) : null
    if (json) {
      const turns = {
        counts: Object.fromEntries(TurnStatus.literals.map((s) => [s, turnCounts[s] ?? 0])),
        blocked: blocked.map((t) => ({ conversationId: t.conversationId, turnId: t.id, state: t.error, since: t.updatedAt }))
      }
      const tunnel = { url: publicUrl(reports)?.url ?? null, detected: reports }
      return yield* Console.log(JSON.stringify({ database: Database.location(config), counts, lastRun: Option.getOrNull(last), live, cursors, schedules, attachments, turns, tunnel, cluster }, null, 2))
    }
    yield* Console.log(`database  ${Database.location(config)}`)
    yield* Console.log(tunnelLine(reports))
    yield* Option.match(last, {
      onNone: () => Console.log("last run  never"),
      onSome: (r) =>
        Console.log(`last run  epoch ${r.epoch} pid ${r.pid} v${r.version}: started ${time(r.startedAt)}, ready ${time(r.readyAt)}, stopped ${time(r.stoppedAt)}`)
    })
    if (live !== null) {
      yield* Console.log(`host      ${live.state} (pid ${live.pid}, updated ${time(live.updatedAt)})`)
      for (const [section, value] of Object.entries(live.sections)) {
        if (section === "runtimes" && Array.isArray(value)) {
          for (const r of value as ReadonlyArray<{ name: string; plugin: string; ready: boolean; since: number }>) {
            yield* Console.log(`runtime   ${r.name} (${r.plugin}): ${r.ready ? "ready" : "NOT READY"} since ${time(r.since)}`)
          }
          if (value.length === 0) yield* Console.log("runtime   none")
        } else {
          yield* Console.log(`${section.padEnd(9)} ${JSON.stringify(value)}`)
        }
      }
    }
    if (cluster !== null) {
      for (const line of clusterLines(cluster, config.config.cluster.shardLockExpirationMs)) yield* Console.log(line)
    }
    for (const c of cursors) yield* Console.log(`cursor    ${c.connection}/${c.stream} at ${c.position} (last event ${time(c.updatedAt)})`)
    for (const t of schedules) yield* Console.log(`schedule  ${formatSummary(t)}`)
    for (const a of attachments) yield* Console.log(`session   ${attachmentLine(a)}`)
    yield* Console.log("turns     " + TurnStatus.literals.map((s) => `${s}=${turnCounts[s] ?? 0}`).join(" "))
    for (const t of blocked) {
      yield* Console.log(`blocked   ${t.conversationId} turn ${t.id}: waiting (${t.error ?? "on a human"}) since ${time(t.updatedAt)}`)
    }
    yield* Console.log("tables    " + Object.entries(counts).map(([t, n]) => `${t}=${n}`).join(" "))
  })
).pipe(
  Command.withDescription("Show what the database holds and what the running host reports."),
  Command.provide(({ json: _ }) =>
    Layer.provideMerge(Layer.provide(Layer.mergeAll(Stores.layer, AttachmentStore.layerDatabase, ClusterStore.layer), Database.layer), HostConfig.layer))
)
