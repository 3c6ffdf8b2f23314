/**
 * Where a tool's path points: relative paths are under the workspace, absolute ones are taken as
 * given (the sandbox is the boundary, not the tool).
 */
import * as path from "node:path"

export const workspaceDir = (): string => process.env.PYNCHY_WORKSPACE_DIR ?? "/workspace"

export const resolvePath = (p: string | undefined): string => path.resolve(workspaceDir(), p ?? ".")

/** How a path is shown to the model: relative to the workspace when it is inside it. */
export const shown = (abs: string): string => {
  const rel = path.relative(workspaceDir(), abs)
  return rel === "" ? "." : rel.startsWith("..") || path.isAbsolute(rel) ? abs : rel
}
