/**
 * Where a configured workspace's folder is, and whether it may be handed to an agent: path
 * arithmetic on the config, used by the sandbox (to mount it) and the pipeline (inbox, outbox).
 */
import * as path from "node:path"
import type { Workspace } from "../domain/workspace.js"

export const workspaceDirOf = (dataDir: string, w: Workspace) =>
  w.folder !== undefined && path.isAbsolute(w.folder) ? w.folder : path.join(dataDir, "workspaces", w.folder ?? w.id)

const within = (parent: string, child: string) => child === parent || child.startsWith(`${parent}${path.sep}`)

/**
 * Why a workspace folder must not be handed to an agent, or undefined when it may: the data dir
 * (database, host-only folders, sockets) may neither lie inside it nor be it, and inside the data
 * dir only `workspaces/` holds workspaces.
 */
export const unsafeWorkspaceFolder = (dataDir: string, workspaceDir: string): string | undefined => {
  const data = path.resolve(dataDir)
  const ws = path.resolve(workspaceDir)
  if (within(ws, data)) return "it holds the data dir"
  if (within(data, ws) && !within(path.join(data, "workspaces"), ws)) return "it lies in the data dir outside workspaces/"
  if (ws === path.join(data, "workspaces")) return "it is the folder of all workspaces"
  return undefined
}
