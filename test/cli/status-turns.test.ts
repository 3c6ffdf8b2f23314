/** `pynchy status` shows the turns by status, and the conversations left waiting on a human (blocked). */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Database from "../../src/db/Database.js"
import { BIN, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"

describe("pynchy status: turns", () => {
  it.effect("counts every status and lists the conversations whose latest turn is blocked", () =>
    Effect.gen(function* () {
      if (!fs.existsSync(BIN)) throw new Error(`the built bin (${BIN}) is missing: run \`npm run build\``)
      const dataDir = tempDir()
      yield* Effect.scoped(Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES ('test:a', 'test', 'a', 'main', 0), ('test:b', 'test', 'b', 'main', 0)`
        // test:a's latest turn is blocked; test:b was blocked once, then answered.
        yield* sql`INSERT INTO turns (id, conversation_id, status, attempts, error, created_at, updated_at) VALUES
          (1, 'test:a', 'completed', 1, NULL, 0, 0), (2, 'test:a', 'blocked', 1, 'needs_input', 0, 1764590400000),
          (3, 'test:b', 'blocked', 1, 'needs_permission', 0, 0), (4, 'test:b', 'completed', 1, NULL, 0, 0),
          (5, 'test:b', 'failed', 3, 'turn_timeout: slow', 0, 0)`
      }).pipe(Effect.provide(Database.layerFile(path.join(dataDir, "pynchy.db")))))
      const env = { PYNCHY_DATA_DIR: dataDir }

      const text = yield* Effect.promise(() => runCli(["status"], { cwd: dataDir, env }))
      assert.strictEqual(text.code, 0, text.stderr)
      assert.match(text.stdout, /^turns {5}queued=0 running=0 completed=2 blocked=2 failed=1 interrupted=0$/m)
      assert.match(text.stdout, /^blocked {3}test:a turn 2: waiting \(needs_input\) since 2025-12-01T12:00:00\.000Z$/m)
      assert.notMatch(text.stdout, /test:b turn 3/)

      const json = yield* Effect.promise(() => runCli(["status", "--json"], { cwd: dataDir, env }))
      assert.strictEqual(json.code, 0, json.stderr)
      const turns = (JSON.parse(json.stdout) as { turns: unknown }).turns
      assert.deepStrictEqual(turns, {
        counts: { queued: 0, running: 0, completed: 2, blocked: 2, failed: 1, interrupted: 0 },
        blocked: [{ conversationId: "test:a", turnId: 2, state: "needs_input", since: 1764590400000 }]
      })
    }))
})
