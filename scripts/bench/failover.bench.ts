/**
 * Failover of a cluster (issue 19, item 6): three real hosts (the built bin, scripted core) on a
 * scratch Postgres, configured as the crash drill's (lock expiration 3 s, assignment refresh
 * 0.5 s). Each round kills the host that holds the connection with -9 and at once sends a message
 * through a survivor's client; the figure is the time from the kill to the moment a survivor's
 * turn took that message (its `handled_by` set), and to its reply reaching the platform file.
 * The baseline is the bound docs/deploy.md states for these settings (lock expiration +
 * assignment refresh + 1 s): a ratio under 1 is a failover within the bound.
 */
import { type ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { makeClient } from "../../layers/stack.js"
import { HostConfig } from "../../src/config/HostConfig.js"
import * as Database from "../../src/db/Database.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { startScratchPostgres } from "../../test/support/postgres.js"
import { DRILL_FAILOVER_BOUND_MS, freePort, killHard, one, openDb, startHost, stopGently, writeHostConfig } from "../crash/driver.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const HOSTS = 3
const progress = (line: string) => process.stderr.write(`  failover: ${line}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const until = async <A>(what: string, probe: () => Promise<A | undefined>, ms = 60_000): Promise<A> => {
  const deadline = performance.now() + ms
  while (performance.now() < deadline) {
    const a = await probe()
    if (a !== undefined) return a
    await sleep(5)
  }
  throw new Error(`failover bench: no ${what} within ${ms} ms`)
}

export default async (): Promise<Array<Row>> => {
  const pg = startScratchPostgres()
  const url = pg.createDatabase()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-failover-"))
  const channelFile = path.join(root, "sent.jsonl")
  const dirs = Array.from({ length: HOSTS }, (_, i) => path.join(root, `host-${i}`))
  const ports = await Promise.all(dirs.map(() => freePort()))
  dirs.forEach((dir, i) => writeHostConfig(dir, { channelFile, idempotent: true, sandbox: false, schedule: false, clusterPort: ports[i]! }))
  const clients = dirs.map((dir) =>
    ManagedRuntime.make(makeClient({
      config: HostConfig.layer.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["PYNCHY_CONFIG", path.join(dir, "pynchy.yaml")], ["PYNCHY_DATABASE_URL", url]]))))),
      database: Database.layer
    }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))))
  const running: Array<ChildProcess | undefined> = dirs.map(() => undefined)
  let sent = 0
  const send = (host: number) => {
    const i = sent++
    return clients[host]!.runPromise(Effect.flatMap(Ingest, (ingest) => ingest.ingest({ connection: "test", place: "room", providerEventId: `ev${i}`, sender: "bench", text: `m${i}` }))).then(() => `m${i}`)
  }
  const toTurn: Array<number> = []
  const toReply: Array<number> = []
  // Written by the hosts themselves once the first ingest has migrated the database.
  await send(0)
  const db = await openDb({ url })
  const handled = (text: string) => one(db, "SELECT handled_by AS turn FROM messages WHERE text = ? AND direction = 'in'", text).then((r) => (r?.turn != null ? true : undefined))
  const replied = (text: string) => () => Promise.resolve(fs.existsSync(channelFile) && fs.readFileSync(channelFile, "utf8").includes(`"echo: ${text}"`) ? true : undefined)
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all(dirs.map(async (dir, i) => {
        if (running[i] === undefined || running[i]!.exitCode !== null || running[i]!.signalCode !== null) running[i] = await startHost(dir, "scripted", url)
      }))
      // Steady: a message answered, then the connection's holder read from the database.
      const warm = await send(round % HOSTS)
      await until("answer before the kill", replied(warm))
      const holder = await one(db, "SELECT runner FROM cluster_connections WHERE connection = 'test'")
      const victim = ports.findIndex((p) => holder?.runner === `127.0.0.1:${p}`)
      if (victim < 0) throw new Error(`failover bench: the holder ${String(holder?.runner)} is none of the hosts`)
      const survivor = (victim + 1) % HOSTS
      const t0 = performance.now()
      await killHard(running[victim]!)
      const text = await send(survivor)
      await until("turn on a survivor", () => handled(text))
      toTurn.push(performance.now() - t0)
      await until("reply from a survivor", replied(text))
      toReply.push(performance.now() - t0)
      progress(`round ${round + 1}: kill → turn ${Math.round(toTurn.at(-1)!)} ms, → reply ${Math.round(toReply.at(-1)!)} ms`)
    }
  } finally {
    await Promise.all(running.map((c) => (c !== undefined && c.exitCode === null && c.signalCode === null ? stopGently(c) : Promise.resolve(0))))
    await db.close()
    await Promise.all(clients.map((c) => c.dispose()))
    pg.stop()
  }
  const bound = { name: "stated bound (lock expiration + assignment refresh + 1 s)", value: DRILL_FAILOVER_BOUND_MS }
  return [
    { name: "failover: kill -9 of the connection's holder → a survivor's turn takes the next message, median", value: median(toTurn), unit: "ms", baseline: bound, goal: "within the bound (< 1x)" },
    { name: "failover: kill -9 of the connection's holder → its reply reaches the platform, median", value: median(toReply), unit: "ms", baseline: bound }
  ]
}
