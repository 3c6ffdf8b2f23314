/**
 * The default sandbox: bubblewrap. Read-only /usr, the workspace and session folders read-write,
 * skills read-only, a private /tmp, every namespace unshared (no network: only `lo`), a cleared
 * environment, all capabilities dropped, killed with its parent. The IPC and gateway sockets are
 * the only ways out, bind-mounted as files. Secrets (the turn token) travel on fd 3, never argv.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { ENTRY_INSIDE, isSafeName, runnerEnv, SANDBOX_PATHS, type SandboxRuntime, type SandboxSpec } from "../runtime.js"
import { type CgroupResult, launcherArgs, makeCgroup } from "./cgroup.js"
import { killProcess, processAlive } from "./procinfo.js"
import { spawnSandbox } from "./spawn.js"

export interface BwrapOptions {
  readonly bwrap?: string
  readonly node?: string
  /** Told when limits could not be applied (the executor logs it). */
  readonly onLimitsSkipped?: (reason: string) => void
}

/** The bwrap arguments (without the program). Exported for the docs and the security tests. */
export const bwrapArgs = (spec: SandboxSpec, node: string): Array<string> => {
  const args = [
    "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64",
    "--symlink", "usr/bin", "/bin",
    "--symlink", "usr/sbin", "/sbin",
    "--dev", "/dev",
    "--proc", "/proc",
    // bwrap leaves /proc/sys writable; when the host runs as root the sandbox's uid maps to root
    // outside, and global sysctls check only that: hide them, and sysrq, read-only.
    "--tmpfs", "/proc/sys",
    "--remount-ro", "/proc/sys",
    "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
    "--tmpfs", "/tmp"
  ]
  // A node installed outside /usr (nvm, a tarball) is mounted read-only where it lives.
  const prefix = path.dirname(path.dirname(node))
  if (!node.startsWith("/usr/")) args.push("--ro-bind", prefix, prefix)
  args.push(
    "--ro-bind", spec.entry, ENTRY_INSIDE,
    "--ro-bind", spec.turnFile, SANDBOX_PATHS.PYNCHY_TURN_FILE,
    "--bind", spec.workspaceDir, SANDBOX_PATHS.PYNCHY_WORKSPACE_DIR,
    "--bind", spec.sessionDir, SANDBOX_PATHS.PYNCHY_SESSION_DIR,
    "--dir", SANDBOX_PATHS.PYNCHY_SKILLS_DIR
  )
  for (const skill of spec.skills) {
    if (isSafeName(skill.name)) args.push("--ro-bind", skill.path, `${SANDBOX_PATHS.PYNCHY_SKILLS_DIR}/${skill.name}`)
  }
  args.push("--bind", spec.ipcSocket, SANDBOX_PATHS.PYNCHY_IPC_SOCKET)
  if (spec.gatewaySocket !== null) args.push("--bind", spec.gatewaySocket, SANDBOX_PATHS.PYNCHY_GATEWAY_SOCKET)
  args.push(
    "--remount-ro", "/",
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    "--cap-drop", "ALL",
    "--uid", "1000",
    "--gid", "1000",
    "--hostname", "agent",
    "--chdir", SANDBOX_PATHS.PYNCHY_WORKSPACE_DIR,
    "--clearenv"
  )
  for (const [k, v] of Object.entries(runnerEnv(spec, SANDBOX_PATHS, SANDBOX_PATHS.PYNCHY_SESSION_DIR))) args.push("--setenv", k, v)
  return args
}

let probed: { ok: boolean; reason?: string } | undefined

export const make = (options: BwrapOptions = {}): SandboxRuntime => {
  const bwrap = options.bwrap ?? "bwrap"
  const node = options.node ?? process.execPath
  return {
    name: "bwrap",
    isolates: true,
    available: async () => {
      if (probed !== undefined) return probed
      try {
        execFileSync(bwrap, ["--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "/usr/bin/true"], { stdio: "ignore", env: {} })
        probed = { ok: true }
      } catch (e) {
        probed = { ok: false, reason: (e as NodeJS.ErrnoException).code === "ENOENT" ? "bwrap is not installed (apt-get install bubblewrap)" : "bwrap cannot create namespaces here" }
      }
      return probed
    },
    start: async (spec) => {
      const limits: CgroupResult = makeCgroup(`pynchy-${spec.sandboxId}`, { memoryMb: spec.memoryMb, maxProcesses: spec.maxProcesses })
      if (limits._tag === "Skipped" && (spec.memoryMb !== undefined || spec.maxProcesses !== undefined)) options.onLimitsSkipped?.(limits.reason)
      const cgroup = limits._tag === "Limited" ? limits.cgroup : undefined
      const launch = launcherArgs(cgroup, bwrap, ["--args", "3", node, ENTRY_INSIDE])
      return spawnSandbox({
        command: launch.command,
        args: launch.args,
        argsFd: bwrapArgs(spec, node),
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
        cwd: spec.sessionDir,
        hostDir: spec.hostDir,
        ...(cgroup !== undefined ? { onExit: cgroup.remove } : {})
      })
    },
    kill: async (id) => killProcess(id),
    isAlive: async (id) => processAlive(id)
  }
}

/** Whether `bwrap` is on PATH (auto selection). */
export const installed = (): boolean => {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
    if (dir !== "" && fs.existsSync(path.join(dir, "bwrap"))) return true
  }
  return false
}
