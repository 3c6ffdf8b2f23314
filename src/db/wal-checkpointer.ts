/**
 * WAL checkpoints off the main thread. SQLite's automatic checkpoint runs inside the commit that
 * takes the WAL past 1,000 pages: on this machine kind that commit takes 6-8 ms instead of about
 * 0.1 (it copies the pages back and syncs both files), and the event loop stands still meanwhile,
 * every ~50 turns. Here a worker thread with its own connection runs `wal_checkpoint(PASSIVE)` a
 * moment after writes (PASSIVE never blocks the writer or readers), and the host's connection
 * checkpoints itself only as a backstop (a WAL of BACKSTOP_PAGES, when the worker falls behind
 * under a long burst). If the worker cannot start or stops, the connection goes back to SQLite's
 * default, so a host is never worse off than without it.
 *
 * The main thread's share is `wrote()`: an atomic add and notify, no message. The worker sleeps in
 * `Atomics.wait` while nothing is written.
 */
import { Effect, Runtime, type Scope } from "effect"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

/** SQLite's default `wal_autocheckpoint`. */
export const DEFAULT_PAGES = 1000
/** The host connection's own threshold while the worker checkpoints (16 MB of 4 KB pages). */
export const BACKSTOP_PAGES = 4000
/** How long after a write the worker checkpoints: at most four checkpoints a second, whatever the write rate. */
const SETTLE_MS = 250
/** The write at which the worker starts (a turn makes about ten; SQLite's first checkpoint comes after ~50 turns). */
const START_AFTER_WRITES = 500
/** How long a stop waits for the worker to close its connection before terminating it. */
const STOP_MS = 2000

// The worker's whole program. `state[0]` counts writes, `state[1]` is the stop flag.
const workerSource = `
const { workerData } = require("node:worker_threads")
const Sqlite = require(workerData.module)
const db = new Sqlite(workerData.filename)
const state = new Int32Array(workerData.state)
let seen = 0
for (;;) {
  Atomics.wait(state, 0, seen)
  if (Atomics.load(state, 1) === 1) break
  // Let a burst of commits finish first: one checkpoint for all of them.
  Atomics.wait(state, 1, 0, workerData.settleMs)
  if (Atomics.load(state, 1) === 1) break
  seen = Atomics.load(state, 0)
  db.pragma("wal_checkpoint(PASSIVE)")
}
db.close()
`

export interface WalCheckpointer {
  /** Call after a write: the worker checkpoints a moment later. */
  readonly wrote: () => void
}

export interface CheckpointedConnection {
  pragma(sql: string): unknown
}

export interface CheckpointerOptions {
  /** How long after a write the worker checkpoints. */
  readonly settleMs?: number
  /** The worker starts at this write (0: at once). */
  readonly startAfterWrites?: number
}

/**
 * Hands the checkpoints of `db` (a connection to `filename`, in WAL mode) to a worker thread,
 * started at the `startAfterWrites`-th write: about when SQLite's own first checkpoint would come
 * (~50 turns), so an idle host does not carry the thread's memory (~9 MB). Until then SQLite
 * checkpoints as usual. The scope stops the worker (after it closes its connection) before the
 * caller's connection closes.
 */
export const start = (db: CheckpointedConnection, filename: string, options: CheckpointerOptions = {}): Effect.Effect<WalCheckpointer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const settleMs = options.settleMs ?? SETTLE_MS
    const startAt = options.startAfterWrites ?? START_AFTER_WRITES
    const runtime = yield* Effect.runtime<never>()
    const state = new Int32Array(new SharedArrayBuffer(8))
    let worker: Worker | undefined
    let writes = 0
    // False once the worker failed or the scope closed: checkpoints stay on the connection.
    let open = true
    const fallBack = (reason: string) => {
      if (!open) return
      open = false
      db.pragma(`wal_autocheckpoint = ${DEFAULT_PAGES}`)
      Runtime.runFork(runtime)(Effect.logWarning("WAL checkpoints are back on the host's connection").pipe(Effect.annotateLogs({ file: filename, reason })))
    }
    // Runs inside a write's statement call: a failure to start must not turn that committed write
    // into an error, so it only falls back.
    const spawn = () => {
      try {
        const w = new Worker(workerSource, {
          eval: true,
          workerData: { module: createRequire(import.meta.url).resolve("better-sqlite3"), filename, state: state.buffer, settleMs }
        })
        w.on("error", (e) => fallBack(e.message))
        w.on("exit", (code) => fallBack(`the checkpoint worker exited (${code})`))
        // The host's exit does not wait for this thread.
        w.unref()
        worker = w
        db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`)
      } catch (e) {
        fallBack(e instanceof Error ? e.message : String(e))
      }
    }
    const wrote = () => {
      if (worker !== undefined) {
        if (!open) return
        Atomics.add(state, 0, 1)
        Atomics.notify(state, 0)
      } else if (open && ++writes >= startAt) spawn()
    }
    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        open = false
        const w = worker
        if (w === undefined || w.threadId === -1) return resume(Effect.void)
        // A checkpoint stuck on the disk does not hold the host's exit.
        const stuck = setTimeout(() => void w.terminate(), STOP_MS)
        w.once("exit", () => {
          clearTimeout(stuck)
          resume(Effect.void)
        })
        Atomics.store(state, 1, 1)
        Atomics.add(state, 0, 1)
        Atomics.notify(state, 0)
        Atomics.notify(state, 1)
      }))
    if (startAt === 0) spawn()
    return { wrote }
  })
