import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Logger, LogLevel, Option } from "effect"
import * as fs from "node:fs"
import { makeTestHost } from "../../layers/test.js"
import { DeployMarker, DeployRollback, markerPath, readMarker, writeMarker } from "../../src/host/DeployRollback.js"
import { tempDir } from "../support/db.js"
import { repoWithTwoCommits } from "../support/git.js"
import { recordingConfig } from "../support/host.js"

const stackWith = (dataDir: string, startFails: boolean) =>
  makeTestHost(recordingConfig(dataDir), {
    runtimes: startFails
      ? [{ plugin: "p", value: { name: "broken", start: () => Promise.reject(new Error("cannot log in")), close: async () => {}, isReady: () => false } }]
      : [],
    rollback: DeployRollback.layerGit(dataDir)
  }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.None)))

describe("deploy rollback (real git repository)", () => {
  it.scopedLive("a failed start during a deploy checks out the previous commit and clears the marker", () =>
    Effect.gen(function* () {
      const { repo, previous, next, head } = repoWithTwoCommits()
      const dataDir = tempDir()
      writeMarker(dataDir, DeployMarker.make({ previous, next, repo, at: Date.now() }))
      const exit = yield* Effect.exit(Layer.build(stackWith(dataDir, true)))
      assert.isTrue(Exit.isFailure(exit))
      const failure = Exit.isFailure(exit) ? Option.getOrNull(Cause.failureOption(exit.cause)) : null
      assert.strictEqual(failure?._tag, "StartupRolledBack")
      if (failure?._tag === "StartupRolledBack") assert.include(failure.reason, "broken")
      assert.strictEqual(head(), previous)
      assert.isFalse(fs.existsSync(markerPath(dataDir)))
    }))

  it.scopedLive("a failed start without a deploy fails as it is and touches nothing", () =>
    Effect.gen(function* () {
      const { next, head } = repoWithTwoCommits()
      const exit = yield* Effect.exit(Layer.build(stackWith(tempDir(), true)))
      const failure = Exit.isFailure(exit) ? Option.getOrNull(Cause.failureOption(exit.cause)) : null
      assert.strictEqual(failure?._tag, "RuntimeStartFailed")
      assert.strictEqual(head(), next)
    }))

  it.scopedLive("a good start confirms the deploy: the marker is cleared, the new version stays", () =>
    Effect.gen(function* () {
      const { repo, previous, next, head } = repoWithTwoCommits()
      const dataDir = tempDir()
      writeMarker(dataDir, DeployMarker.make({ previous, next, repo, at: Date.now() }))
      yield* Layer.build(stackWith(dataDir, false))
      assert.isTrue(Option.isNone(readMarker(dataDir)))
      assert.strictEqual(head(), next)
    }))
})
