/**
 * Where a sandbox's folders live under the data dir, and which of them the agent may write.
 *
 * - `sandboxes/<sid>/` is host-only (never mounted): the turn spec, the liveness record, the
 *   outcome, the runner's log and the IPC socket. Whatever the host reads back to decide
 *   something (which process to signal at recovery) comes from here.
 * - `sessions/<sid>/` and the workspace folder are the agent's: read only through untrusted.ts.
 */
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { workspaceSkillsDir } from "./skills.js"

export const SANDBOX_ID = /^[a-f0-9]{12}$/

export const sessionsDir = (dataDir: string) => path.join(dataDir, "sessions")
export const sandboxesDir = (dataDir: string) => path.join(dataDir, "sandboxes")
export const sessionDirOf = (dataDir: string, sid: string) => path.join(sessionsDir(dataDir), sid)
/** Host-only, kept across turns: what a runtime prepares once (bwrap's exec-only node). */
export const runtimeDirOf = (dataDir: string) => path.join(dataDir, "runtime")
export const hostDirOf = (dataDir: string, sid: string) => path.join(sandboxesDir(dataDir), sid)
/**
 * A plugin core's durable folder for a conversation (agent-writable, never read by the host): its
 * HOME and session state, one per context start so `/new` begins empty. Named by a hash of the
 * conversation id, which may hold any characters.
 */
export const coreHomeOf = (dataDir: string, conversationId: string, core: string, contextStart: number) =>
  path.join(dataDir, "homes", createHash("sha256").update(conversationId).digest("hex").slice(0, 32), `${core.replace(/[^A-Za-z0-9._-]/g, "_")}-${contextStart}`)

/** Creates a folder the host owns (0700); an existing one is tightened to 0700. */
export const ensurePrivateDir = (dir: string) => {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  fs.chmodSync(dir, 0o700)
}

/**
 * Makes the workspace folder and its `skills/` folder exist. `skills/` is mounted read-only into
 * every sandbox, so it must be a real folder: anything else an earlier agent left there (a link,
 * a FIFO, a file) is renamed aside, never followed. Returns what was renamed, if anything.
 */
export const prepareWorkspace = (workspaceDir: string): string | undefined => {
  fs.mkdirSync(workspaceDir, { recursive: true })
  const skills = workspaceSkillsDir(workspaceDir)
  let stat: fs.Stats | undefined
  try {
    stat = fs.lstatSync(skills)
  } catch {
    stat = undefined
  }
  if (stat?.isDirectory()) return undefined
  let aside: string | undefined
  if (stat !== undefined) {
    aside = `${skills}.unsafe-${randomBytes(4).toString("hex")}`
    fs.renameSync(skills, aside)
  }
  fs.mkdirSync(skills)
  return aside
}
