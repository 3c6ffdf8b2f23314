/**
 * After each turn, once its sandbox is gone: no setuid or setgid file the agent made outlives
 * the turn, and a workspace past `limits.workspaceMaxMb` earns the conversation one notice (again
 * only after it has been back under the cap).
 */
import { Effect } from "effect"
import type { TurnInput } from "../pipeline/AgentExecutor.js"
import { auditFolder } from "../untrusted/untrusted.js"

export const makeWorkspaceAudit = (capMb: number) => {
  const overCap = new Set<string>()
  return (input: TurnInput, workspaceDir: string) =>
    Effect.gen(function* () {
      const audit = yield* Effect.promise(() => auditFolder(workspaceDir))
      const w = input.workspace.id
      if (audit.stripped > 0) {
        yield* Effect.logWarning("setuid/setgid bits removed from workspace files").pipe(Effect.annotateLogs({ workspace: w, files: audit.stripped, turn: input.turn.id }))
      }
      const mb = Math.ceil(audit.bytes / (1024 * 1024))
      if (mb <= capMb) return void overCap.delete(w)
      if (overCap.has(w)) return
      overCap.add(w)
      yield* Effect.logWarning("workspace over its size cap").pipe(Effect.annotateLogs({ workspace: w, mb, capMb }))
      yield* input.notice("workspace_size", `(The workspace '${w}' holds ${mb} MB, past its cap of ${capMb} MB. Old files can be removed, or limits.workspaceMaxMb raised.)`)
    })
}
