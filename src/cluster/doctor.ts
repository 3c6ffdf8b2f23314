import { Duration, Effect, Layer, Option } from "effect"
import * as net from "node:net"
import type { HostConfig } from "../config/HostConfig.js"
import * as Database from "../db/Database.js"
import { runnerAddressOf } from "./Cluster.js"
import { ClusterStore } from "./ClusterStore.js"

export interface ClusterCheck {
  readonly verdict: "ok" | "warn" | "fail"
  readonly name: string
  readonly detail: string
  readonly fix?: string
}

const CONNECT_TIMEOUT = Duration.seconds(2)

/** Whether a TCP connection to `host:port` opens (within 2 s). */
const reachable = (address: string) => {
  const at = address.lastIndexOf(":")
  return Effect.async<boolean>((resume) => {
    const socket = net.connect({ host: address.slice(0, at), port: Number(address.slice(at + 1)) })
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(true))
    })
    socket.once("error", () => resume(Effect.succeed(false)))
    return Effect.sync(() => socket.destroy())
  }).pipe(Effect.timeoutTo({ duration: CONNECT_TIMEOUT, onTimeout: () => false, onSuccess: (ok) => ok }))
}

/**
 * `pynchy doctor`'s cluster line (Postgres only): the runners the shared database lists with a
 * heartbeat younger than the shard lock expiration, each tried over TCP from here.
 */
export const clusterCheck = (cfg: HostConfig.Service): Effect.Effect<Option.Option<ClusterCheck>> =>
  Effect.gen(function* () {
    if (Option.isNone(cfg.databaseUrl)) return Option.none()
    const self = runnerAddressOf(cfg.config.cluster)
    const view = yield* Effect.flatMap(ClusterStore, (s) => s.view).pipe(
      Effect.provide(Layer.provide(ClusterStore.layer, Database.layerOf(cfg))),
      Effect.scoped,
      Effect.either
    )
    if (view._tag === "Left") return Option.none() // the database line says why
    const live = view.right.runners.filter((r) => r.heartbeatAgeMs < cfg.config.cluster.shardLockExpirationMs)
    if (live.length === 0) {
      return Option.some({ verdict: "warn", name: "cluster", detail: `no live runner registered yet (this host would be ${self})`, fix: "start a host: `pynchy start`" })
    }
    const tried = yield* Effect.forEach(live, (r) => Effect.map(reachable(r.address), (ok) => ({ address: r.address, ok })), { concurrency: "unbounded" })
    const down = tried.filter((t) => !t.ok).map((t) => t.address)
    return Option.some(down.length === 0
      ? { verdict: "ok", name: "cluster", detail: `${live.length} live runner(s) reachable: ${live.map((r) => r.address).join(", ")} (this host: ${self})` }
      : {
        verdict: "fail",
        name: "cluster",
        detail: `runner(s) registered but not reachable from here: ${down.join(", ")}`,
        fix: "each host's cluster.host and cluster.port must be reachable from every other host (docs/deploy.md)"
      })
  })
