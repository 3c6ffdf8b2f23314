/**
 * A Matrix message in to the reply visible in the room, against a real Synapse (sid root, bwrap),
 * with the scripted core: p50 over sequential round trips, as the sender sees it (her own /sync
 * long-poll sees the reply). Baseline: the same two homeserver hops with a bare echo bot (raw
 * fetch: /sync long-poll, PUT send) instead of the host; the difference is the host's share
 * (Matrix runtime, durable ingest, turn, delivery row, send).
 */
import { Effect, Either, Exit, Layer, Scope } from "effect"
import { createRequire } from "node:module"
import { makeTestHost } from "../../layers/test.js"
import { SYNC_FILTER } from "../../src/channels/matrix/MatrixApi.js"
import { makeMatrixRuntime } from "../../src/channels/matrix/MatrixRuntime.js"
import { decodeMatrixSettings } from "../../src/channels/matrix/settings.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { tempDir } from "../../test/support/db.js"
import { type MatrixUser, skipWithoutSynapse, startSynapse } from "../../test/support/synapse.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

const WARMUP = 5
const ROUNDS = 30


const syncOnce = async (user: MatrixUser, since: string | undefined, signal: AbortSignal) => {
  // The runtime's own filter, so both sides ask the homeserver for the same work.
  const q = new URLSearchParams({ filter: SYNC_FILTER, timeout: since ? "30000" : "0", ...(since ? { since } : {}) })
  const res = await fetch(`${user.baseUrl}/_matrix/client/v3/sync?${q}`, { headers: { authorization: `Bearer ${user.accessToken}` }, signal })
  if (!res.ok) throw new Error(`sync ${res.status}`)
  return (await res.json()) as { next_batch: string; rooms?: { join?: Record<string, { timeline?: { events?: Array<{ type: string; sender: string; event_id: string; content?: { body?: string } }> } }> } }
}

/** A /sync loop calling `onMessage` for every text message of other users, until aborted. */
const watch = (user: MatrixUser, onMessage: (room: string, sender: string, body: string) => void) => {
  const abort = new AbortController()
  const ready = (async () => {
    let since = (await syncOnce(user, undefined, abort.signal)).next_batch
    const loop = async () => {
      while (!abort.signal.aborted) {
        const r = await syncOnce(user, since, abort.signal).catch(() => undefined)
        if (r === undefined) continue
        since = r.next_batch
        for (const [room, joined] of Object.entries(r.rooms?.join ?? {})) {
          for (const e of joined.timeline?.events ?? []) {
            if (e.type === "m.room.message" && e.sender !== user.userId && typeof e.content?.body === "string") onMessage(room, e.sender, e.content.body)
          }
        }
      }
    }
    void loop()
  })()
  return { ready, stop: () => abort.abort() }
}

/** Sequential round trips: alice sends `m<i>`, waits until she sees `echo: m<i>`; ms each. */
const roundTrips = async (alice: MatrixUser, room: string, label: string) => {
  let waiting: { text: string; resolve: () => void } | undefined
  const watcher = watch(alice, (_room, _sender, body) => {
    if (waiting && body === waiting.text) waiting.resolve()
  })
  await watcher.ready
  const times: Array<number> = []
  try {
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      const text = `${label} ${i}`
      const seen = new Promise<void>((resolve) => (waiting = { text: `echo: ${text}`, resolve }))
      const t0 = performance.now()
      await alice.send(room, text)
      await seen
      if (i >= WARMUP) times.push(performance.now() - t0)
    }
  } finally {
    watcher.stop()
  }
  return median(times)
}

export default async function (): Promise<Array<Row>> {
  if (skipWithoutSynapse()) throw new Error("no Synapse: run scripts/system/sid-root.sh")
  const synapse = await startSynapse()
  try {
    const alice = await synapse.register("alice")
    const echo = await synapse.register("echo")
    const bot = await synapse.register("bot", "bot-password")

    // Baseline: a bare echo bot over the same two homeserver hops.
    const rawRoom = await alice.createRoom([echo.userId])
    await echo.join(rawRoom)
    const rawRun = async (label: string) => {
      const raw = watch(echo, (room, _sender, body) => void echo.send(room, `echo: ${body}`))
      await raw.ready
      return roundTrips(alice, rawRoom, label).finally(() => raw.stop())
    }
    const rawBefore = await rawRun("raw-a")

    // The host: scripted core, the Matrix runtime, a file database.
    const dir = tempDir()
    const config = Either.getOrThrow(decodeConfig({
      dataDir: dir,
      workspaces: [{ id: "main" }],
      routes: [{ connection: "mx", place: "*", workspace: "main" }],
      connections: {}
    }, "bench"))
    const runtime = makeMatrixRuntime({
      name: "mx",
      settings: decodeMatrixSettings("mx", { kind: "matrix", homeserver: synapse.baseUrl, userId: bot.userId, password: bot.password }),
      dataDir: dir
    })
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Layer.buildWithScope(makeTestHost(config, { databaseFile: `${dir}/pynchy.db`, runtimes: [{ plugin: "matrix", value: runtime }] }), scope))
    let hostP50: number
    try {
      const room = await alice.createRoom([bot.userId])
      while (!(await alice.members(room)).includes(bot.userId)) await new Promise((r) => setTimeout(r, 20))
      hostP50 = await roundTrips(alice, room, "host")
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // Inside the host, from its own rows: inbound committed → reply recorded → reply accepted by Synapse.
    const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new (f: string, o?: object) => { prepare(q: string): { all(): Array<{ recorded: number; sent: number }> }; close(): void }
    const db = new Sqlite(`${dir}/pynchy.db`, { readonly: true })
    const inside = db.prepare(`SELECT d.created_at - m.created_at AS recorded, d.updated_at - m.created_at AS sent
      FROM messages m JOIN deliveries d ON d.text = 'echo: ' || m.text AND d.status = 'sent'
      WHERE m.direction = 'in' ORDER BY m.id DESC LIMIT ${ROUNDS}`).all()
    db.close()
    // Measured before and after the host's run (the box drifts): the lower is the floor.
    const rawP50 = Math.min(rawBefore, await rawRun("raw-b"))
    return [
      { name: "matrix message in → reply in room, p50 (scripted core)", value: hostP50, unit: "ms", baseline: { name: "bare echo bot, same 2 hops", value: rawP50 } },
      { name: "host's share of the round trip (difference of p50s)", value: Math.max(0, hostP50 - rawP50), unit: "ms" },
      { name: "inside the host: inbound committed → reply recorded, p50", value: median(inside.map((r) => r.recorded)), unit: "ms" },
      { name: "inside the host: inbound committed → reply sent (incl. the PUT), p50", value: median(inside.map((r) => r.sent)), unit: "ms" }
    ]
  } finally {
    synapse.stop()
  }
}
