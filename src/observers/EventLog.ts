/**
 * The built-in observer that keeps the event log: bus events go to the `events` table in batches,
 * one transaction each (one per event would cap the host at SQLite's commit rate), through a queue
 * of 65,536 events (plugins' observers get `observers.queueSize`), and events
 * older than `observers.retainDays` are pruned at start and then every hour, on the Clock.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { HostStore } from "../db/HostStore.js"
import { Observers } from "./Observers.js"

const DAY = 86_400_000
const PRUNE_EVERY = Duration.hours(1)

export const EventLog = {
  layer: Layer.scopedDiscard(
    Effect.gen(function* () {
      const { config } = yield* HostConfig
      const store = yield* HostStore
      const sql = yield* SqlClient.SqlClient
      const observers = yield* Observers
      yield* observers.attach({
        name: "event-log",
        maxBatch: 512,
        // One transaction per burst, written after the steps of the turn it records.
        deferred: true,
        // Bursts (a backlog caught up after an outage) must not cost the record: it writes 512
        // events per transaction, far faster than they are published, so this is memory, not delay.
        capacity: 65_536,
        handle: (events) => sql.withTransaction(store.appendEvents(events)).pipe(Effect.orDie)
      })
      const prune = Effect.flatMap(Clock.currentTimeMillis, (now) => store.pruneEvents(now - config.observers.retainDays * DAY)).pipe(
        Effect.tap((n) => (n > 0 ? Effect.logInfo("event log pruned").pipe(Effect.annotateLogs({ events: n, retainDays: config.observers.retainDays })) : Effect.void)),
        Effect.catchAllDefect((d) => Effect.logWarning("event log pruning failed", d))
      )
      yield* Effect.forkScoped(Effect.repeat(prune, Schedule.spaced(PRUNE_EVERY)))
    })
  )
}
