/**
 * Docker over its CLI: no network, read-only root, capabilities dropped, no new privileges,
 * memory and pids limits, the same mounts as bwrap. The container is named `pynchy-<sandbox id>`,
 * which is its liveness id. Secrets are passed by name (`-e NAME`), their values only in the
 * docker client's environment, never on its command line.
 */
import { execFile } from "node:child_process"
import * as path from "node:path"
import { CORE_INSIDE, ENTRY_INSIDE, HOME_INSIDE, isSafeName, PACKAGES_INSIDE, runnerEnv, SANDBOX_PATHS, type SandboxRuntime, type SandboxSpec } from "../runtime.js"
import { spawnSandbox } from "./spawn.js"

export interface DockerOptions {
  readonly docker?: string
  /** An image with node 20 at /usr/local/bin/node or on PATH. */
  readonly image?: string
}

const run = (docker: string, args: ReadonlyArray<string>) =>
  new Promise<{ ok: boolean; stdout: string }>((resolve) => {
    execFile(docker, [...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeout: 30_000 }, (error, stdout) =>
      resolve({ ok: error === null, stdout: String(stdout) })
    )
  })

export const dockerArgs = (spec: SandboxSpec, image: string): { args: Array<string>; env: Record<string, string> } => {
  const env = runnerEnv(spec, SANDBOX_PATHS, SANDBOX_PATHS.PYNCHY_SESSION_DIR)
  const args = [
    "run", "--rm", "-i",
    "--name", `pynchy-${spec.sandboxId}`,
    "--label", "pynchy.sandbox=1",
    "--network", "none",
    "--read-only",
    "--cap-drop", "ALL",
    "--security-opt", "no-new-privileges",
    "--user", `${process.getuid?.() ?? 1000}:${process.getgid?.() ?? 1000}`,
    "--tmpfs", "/tmp",
    "--workdir", SANDBOX_PATHS.PYNCHY_WORKSPACE_DIR,
    "-v", `${spec.entry}:${ENTRY_INSIDE}:ro`,
    ...(spec.coreModule !== undefined ? ["-v", `${spec.coreModule}:${CORE_INSIDE}:ro`] : []),
    ...(spec.corePackages !== undefined ? ["-v", `${spec.corePackages}:${PACKAGES_INSIDE}:ro`] : []),
    ...(spec.homeDir !== undefined ? ["-v", `${spec.homeDir}:${HOME_INSIDE}`] : []),
    "-v", `${spec.turnFile}:${SANDBOX_PATHS.PYNCHY_TURN_FILE}:ro`,
    "-v", `${spec.workspaceDir}:${SANDBOX_PATHS.PYNCHY_WORKSPACE_DIR}`,
    "-v", `${spec.sessionDir}:${SANDBOX_PATHS.PYNCHY_SESSION_DIR}`,
    ...(spec.workspaceReadOnly ?? []).flatMap((rel) => ["-v", `${path.join(spec.workspaceDir, rel)}:${path.posix.join(SANDBOX_PATHS.PYNCHY_WORKSPACE_DIR, rel)}:ro`]),
    "-v", `${spec.ipcSocket}:${SANDBOX_PATHS.PYNCHY_IPC_SOCKET}`
  ]
  if (spec.gatewaySocket !== null) args.push("-v", `${spec.gatewaySocket}:${SANDBOX_PATHS.PYNCHY_GATEWAY_SOCKET}`)
  for (const skill of spec.skills) {
    if (isSafeName(skill.name)) args.push("-v", `${skill.path}:${SANDBOX_PATHS.PYNCHY_SKILLS_DIR}/${skill.name}:ro`)
  }
  if (spec.memoryMb !== undefined) args.push("--memory", `${spec.memoryMb}m`)
  if (spec.maxProcesses !== undefined) args.push("--pids-limit", String(spec.maxProcesses))
  for (const name of Object.keys(env)) args.push("-e", name)
  args.push(image, "node", ENTRY_INSIDE)
  return { args, env }
}

export const make = (options: DockerOptions = {}): SandboxRuntime => {
  const docker = options.docker ?? "docker"
  const image = options.image ?? "node:20-slim"
  return {
    name: "docker",
    isolates: true,
    available: async () => {
      const info = await run(docker, ["info", "--format", "{{.ServerVersion}}"])
      return info.ok ? { ok: true } : { ok: false, reason: "no Docker engine answers (docker info failed)" }
    },
    start: async (spec) => {
      const { args, env } = dockerArgs(spec, image)
      const name = `pynchy-${spec.sandboxId}`
      return spawnSandbox({
        command: docker,
        args,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
        cwd: spec.sessionDir,
        hostDir: spec.hostDir,
        idOf: () => name
      })
    },
    kill: async (id) => {
      await run(docker, ["rm", "-f", id])
    },
    isAlive: async (id) => {
      const r = await run(docker, ["inspect", "--format", "{{.State.Running}}", id])
      return r.ok && r.stdout.trim() === "true"
    }
  }
}
