/**
 * Session retention: a sandbox's folders (`sessions/<sid>`, `sandboxes/<sid>`) are removed once
 * they are older than `limits.sessionRetentionDays`. The age is the host-only folder's (the agent
 * can set its own folder's times to anything); a live sandbox's folders are kept whatever their
 * age. Removal never follows links (fs.rm unlinks a link, it does not descend into it).
 */
import { Clock, Effect } from "effect"
import * as fsp from "node:fs/promises"
import { hostDirOf, SANDBOX_ID, sandboxesDir, sessionDirOf, sessionsDir } from "./folders.js"

const DAY = 86_400_000

const mtimeOf = (dir: string) => fsp.lstat(dir).then((s) => s.mtimeMs, () => undefined)
const idsIn = (dir: string) => fsp.readdir(dir).then((names) => names.filter((n) => SANDBOX_ID.test(n)), () => [] as Array<string>)

export const sweepSessions = (dataDir: string, retentionDays: number, isAlive: (sid: string) => Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const cutoff = now - retentionDays * DAY
    const ids = yield* Effect.promise(async () => [...new Set([...(await idsIn(sandboxesDir(dataDir))), ...(await idsIn(sessionsDir(dataDir)))])])
    let removed = 0
    for (const sid of ids) {
      const age = yield* Effect.promise(async () => (await mtimeOf(hostDirOf(dataDir, sid))) ?? (await mtimeOf(sessionDirOf(dataDir, sid))))
      if (age === undefined || age > cutoff) continue
      if (yield* isAlive(sid)) continue
      yield* Effect.promise(() =>
        Promise.all([sessionDirOf(dataDir, sid), hostDirOf(dataDir, sid)].map((d) => fsp.rm(d, { recursive: true, force: true }).catch(() => undefined)))
      )
      removed++
    }
    if (removed > 0) yield* Effect.logInfo("old sessions removed").pipe(Effect.annotateLogs({ removed, retentionDays }))
    return removed
  })
