import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { makeTestHost } from "../../layers/test.js"
import type { ConnectionRuntime } from "../../src/contracts/connection-runtime.js"
import { tempDir } from "../support/db.js"
import { recordingConfig } from "../support/host.js"

const recorder = (log: Array<string>) =>
  Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => {
    const text = Array.isArray(message) ? message.join(" ") : String(message)
    if (text.startsWith("started ") || text.startsWith("stopping ")) log.push(text)
  }))

const runtime = (name: string, log: Array<string>): ConnectionRuntime => ({
  name,
  start: async () => void log.push(`started runtime ${name}`),
  close: async () => void log.push(`stopping runtime ${name}`),
  isReady: () => true
})

describe("the whole stack", () => {
  it.scopedLive("releases every layer in the exact reverse of acquisition", () =>
    Effect.gen(function* () {
      const log: Array<string> = []
      const host = makeTestHost(recordingConfig(tempDir()), { runtimes: [{ plugin: "p", value: runtime("a", log) }, { plugin: "p", value: runtime("b", log) }] })
      yield* Effect.scoped(Layer.build(host)).pipe(Effect.provide(Layer.merge(recorder(log), Logger.minimumLogLevel(LogLevel.Info))))
      const acquired = log.filter((l) => l.startsWith("started ")).map((l) => l.slice(8))
      const released = log.filter((l) => l.startsWith("stopping ")).map((l) => l.slice(9))
      assert.deepStrictEqual(acquired, [
        "config", "plugins", "database", "event bus", "agent sessions", "gateway", "conversation memory", "outbox", "host actions", "queue", "pipeline", "recovery: release orphan claims", "control socket",
        "runtime a", "runtime b", "connection runtimes", "recovery: dispatch", "schedules", "channels", "host"
      ])
      // Layers log "stopping X" before their own resources go, so runtimes close inside their layer.
      assert.deepStrictEqual(released, [
        "host", "channels", "schedules", "recovery: dispatch", "connection runtimes", "runtime b", "runtime a", "control socket",
        "recovery: release orphan claims", "pipeline", "queue", "host actions", "outbox", "conversation memory", "gateway", "agent sessions", "event bus", "database", "plugins", "config"
      ])
    }))
})
