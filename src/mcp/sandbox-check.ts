/**
 * What `pynchy doctor` checks of a `where: sandbox` MCP server without starting it. The server
 * runs only inside a turn's sandbox (bwrap's view: /usr read-only, the workspace folder at
 * /workspace), so starting it on the host would test another machine: a correct `/workspace/...`
 * server always failed there. Instead, for each workspace that lists the server, every path the
 * sandbox would open is looked up where the sandbox would find it: the command (`node` is the
 * runner's own; a bare name on the sandbox's PATH, /usr/local/bin, /usr/bin, /bin) and every
 * absolute argument. Paths under /workspace/ map to that workspace's folder; other absolute paths
 * must lie under /usr, the only other host folder a sandbox sees. The server is not run, so a
 * program that is found but fails at start is found at its first turn (named in the system prompt).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { workspaceDirOf } from "../config/workspace-folder.js"
import type { McpServerSpec } from "../domain/mcp.js"
import type { Workspace } from "../domain/workspace.js"

const SANDBOX_PATH = ["/usr/local/bin", "/usr/bin", "/bin"]

/** The host path behind a sandbox path, or why the sandbox cannot see it. */
const hostPathOf = (sandboxPath: string, workspaceDir: string): { readonly host: string } | { readonly problem: string } => {
  const p = path.posix.normalize(sandboxPath)
  if (p === "/workspace" || p.startsWith("/workspace/")) return { host: path.join(workspaceDir, p.slice("/workspace".length)) }
  if (p.startsWith("/usr/")) return { host: p }
  if (p.startsWith("/bin/")) return { host: `/usr${p}` }
  return { problem: `${sandboxPath} is outside /usr and /workspace, so the sandbox does not see it` }
}

const exists = (p: string) => fs.existsSync(p)

/** The problems of one sandbox server for one workspace folder (empty when every path is found). */
export const sandboxServerProblems = (spec: McpServerSpec, workspaceDir: string): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const check = (sandboxPath: string, what: string) => {
    const at = hostPathOf(sandboxPath, workspaceDir)
    if ("problem" in at) problems.push(`${what} ${at.problem}`)
    else if (!exists(at.host)) problems.push(`${what} ${sandboxPath} is not there (looked for ${at.host})`)
  }
  if (spec.command === "node") {
    // The runner's node, mounted where it lives.
  } else if (spec.command.startsWith("/")) {
    check(spec.command, "the command")
  } else if (spec.command.includes("/")) {
    check(path.posix.join("/workspace", spec.command), "the command")
  } else if (!SANDBOX_PATH.some((dir) => exists(path.join(dir.startsWith("/bin") ? `/usr${dir}` : dir, spec.command)))) {
    problems.push(`the command '${spec.command}' is not on the sandbox's PATH (${SANDBOX_PATH.join(":")})`)
  }
  for (const arg of spec.args) if (arg.startsWith("/")) check(arg, "the argument")
  return problems
}

/** The check of a sandbox server across the workspaces that list it: what was looked at, and every problem by workspace. */
export const checkSandboxServer = (spec: McpServerSpec, workspaces: ReadonlyArray<Workspace>, dataDir: string) => {
  const users = workspaces.filter((w) => w.mcpServers.includes(spec.name))
  const problems = users.flatMap((w) => sandboxServerProblems(spec, workspaceDirOf(dataDir, w)).map((p) => `workspace '${w.id}': ${p}`))
  return { workspaces: users.map((w) => w.id), problems }
}
