/**
 * The default sandbox: bubblewrap. Read-only /usr, the workspace and session folders read-write,
 * skills read-only, a private /tmp, every namespace unshared (no network: only `lo`), a cleared
 * environment, all capabilities dropped, a seccomp filter (seccomp.ts), killed with its parent.
 * The IPC and gateway sockets (both the sandbox's own) are the only ways out, bind-mounted as
 * files. The arguments travel on fd 3, never argv; the turn token is not among them (it comes over
 * IPC, because bwrap's init, pid 1 inside, keeps its arguments in memory the agent may read). The
 * runner is executed from an exec-only copy of node, so it is not dumpable and its tools cannot
 * read it (exec-only.ts). When the host is root the sandbox runs as an unprivileged host user
 * (src/system/sandbox-user.ts), reached through the launcher (launcher.ts).
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { UNTRACEABLE_ENV } from "../../protocol/ipc.js"
import { CORE_INSIDE, ENTRY_INSIDE, HOME_INSIDE, isSafeName, NODE_INSIDE, PACKAGES_INSIDE, runnerEnv, SANDBOX_PATHS, type SandboxRuntime, type SandboxSpec } from "../runtime.js"
import { type CgroupResult, makeCgroup, sweepCgroups } from "./cgroup.js"
import { execOnlyNode } from "./exec-only.js"
import { launch, launcherSupported, PERL, STAGE_DIR } from "./launcher.js"
import { killProcess, LAUNCH_MARKER, processAlive } from "./procinfo.js"
import { giveToSandbox, sandboxUser } from "../../system/sandbox-user.js"
import { seccompProgram } from "./seccomp.js"
import { spawnSandbox } from "./spawn.js"

export interface BwrapOptions {
  readonly bwrap?: string
  readonly node?: string
  /** Told when limits could not be applied (the executor logs it). */
  readonly onLimitsSkipped?: (reason: string) => void
}

/** The only environment bwrap itself gets (it shows as /proc/1/environ inside): never the host's. */
export const LAUNCH_ENV: Readonly<Record<string, string>> = { PATH: "/usr/bin:/bin", [LAUNCH_MARKER]: "bwrap" }
/** The descriptor bwrap reads the seccomp program from (3 carries the arguments). */
const SECCOMP_FD = 4

/** A host path the sandbox sees. */
export interface HostMount {
  readonly source: string
  readonly dest: string
  readonly writable: boolean
  readonly dir: boolean
}

/** `runnerNode`: the exec-only copy of `node` the runner runs from, mounted at NODE_INSIDE. */
export const hostMounts = (spec: SandboxSpec, node: string, runnerNode?: string): Array<HostMount> => {
  const mounts: Array<HostMount> = []
  // A node installed outside /usr (nvm, a tarball) is mounted read-only where it lives.
  const prefix = path.dirname(path.dirname(node))
  if (!node.startsWith("/usr/")) mounts.push({ source: prefix, dest: prefix, writable: false, dir: true })
  mounts.push(
    ...(runnerNode !== undefined ? [{ source: runnerNode, dest: NODE_INSIDE, writable: false, dir: false }] : []),
    { source: spec.entry, dest: ENTRY_INSIDE, writable: false, dir: false },
    ...(spec.coreModule !== undefined ? [{ source: spec.coreModule, dest: CORE_INSIDE, writable: false, dir: false }] : []),
    ...(spec.corePackages !== undefined ? [{ source: spec.corePackages, dest: PACKAGES_INSIDE, writable: false, dir: true }] : []),
    { source: spec.turnFile, dest: SANDBOX_PATHS.PYNCHY_TURN_FILE, writable: false, dir: false },
    { source: spec.workspaceDir, dest: SANDBOX_PATHS.PYNCHY_WORKSPACE_DIR, writable: true, dir: true },
    { source: spec.sessionDir, dest: SANDBOX_PATHS.PYNCHY_SESSION_DIR, writable: true, dir: true },
    ...(spec.homeDir !== undefined ? [{ source: spec.homeDir, dest: HOME_INSIDE, writable: true, dir: true }] : [])
  )
  for (const rel of spec.workspaceReadOnly ?? []) {
    mounts.push({ source: path.join(spec.workspaceDir, rel), dest: path.posix.join(SANDBOX_PATHS.PYNCHY_WORKSPACE_DIR, rel), writable: false, dir: true })
  }
  for (const skill of spec.skills) {
    if (isSafeName(skill.name)) mounts.push({ source: skill.path, dest: `${SANDBOX_PATHS.PYNCHY_SKILLS_DIR}/${skill.name}`, writable: false, dir: true })
  }
  mounts.push({ source: spec.ipcSocket, dest: SANDBOX_PATHS.PYNCHY_IPC_SOCKET, writable: true, dir: false })
  if (spec.gatewaySocket !== null) mounts.push({ source: spec.gatewaySocket, dest: SANDBOX_PATHS.PYNCHY_GATEWAY_SOCKET, writable: true, dir: false })
  return mounts
}

/** Where bwrap finds the i-th host mount when the launcher staged them (the host is root). */
export const stagedPath = (i: number) => `${STAGE_DIR}/m${i}`

export interface BwrapArgsOptions {
  /** Bind the staged copies (`stagedPath`) instead of the host paths. */
  readonly staged?: boolean
  /** The descriptor of the seccomp program. */
  readonly seccompFd?: number
  /** The exec-only node the runner runs from (mounted at NODE_INSIDE; the runner is told to check it is untraceable). */
  readonly runnerNode?: string
}

/** The bwrap arguments (without the program). Exported for the docs and the security tests. */
export const bwrapArgs = (spec: SandboxSpec, node: string, options: BwrapArgsOptions = {}): Array<string> => {
  const args = [
    "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64",
    "--symlink", "usr/bin", "/bin",
    "--symlink", "usr/sbin", "/sbin",
    "--dev", "/dev",
    "--proc", "/proc",
    // bwrap leaves /proc/sys writable, and global sysctls check only the uid: hide them, and sysrq, read-only.
    "--tmpfs", "/proc/sys",
    "--remount-ro", "/proc/sys",
    "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
    "--tmpfs", "/tmp",
    "--dir", SANDBOX_PATHS.PYNCHY_SKILLS_DIR
  ]
  hostMounts(spec, node, options.runnerNode).forEach((m, i) => args.push(m.writable ? "--bind" : "--ro-bind", options.staged === true ? stagedPath(i) : m.source, m.dest))
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
  if (options.seccompFd !== undefined) args.push("--seccomp", String(options.seccompFd))
  for (const [k, v] of Object.entries(runnerEnv(spec, SANDBOX_PATHS, SANDBOX_PATHS.PYNCHY_SESSION_DIR))) args.push("--setenv", k, v)
  if (options.runnerNode !== undefined) args.push("--setenv", UNTRACEABLE_ENV, "1")
  return args
}

/** An absolute path for `bwrap`, so the launcher needs no PATH of the host's. */
const resolveCommand = (cmd: string): string => {
  if (cmd.includes("/")) return cmd
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
    if (dir !== "" && path.isAbsolute(dir) && fs.existsSync(path.join(dir, cmd))) return path.join(dir, cmd)
  }
  return `/usr/bin/${cmd}`
}

type Probe = { readonly ok: boolean; readonly reason?: string }

/** The dumpable value an exec of an unreadable file gives (exec-only.ts): 1 would leave the runner traceable. */
const suidDumpable = (): string | undefined => {
  try {
    return fs.readFileSync("/proc/sys/fs/suid_dumpable", "utf8").trim()
  } catch {
    return undefined
  }
}

/**
 * Whether bwrap can start a sandbox here: one real launch of `/usr/bin/true`, made once per
 * process (the first caller's launch; the others wait for it). It runs as a child process, so
 * the host goes on starting meanwhile (`pynchy start` asks before it builds the host).
 */
let probing: Promise<Probe> | undefined
let swept = false

const probe = (bwrap: string): Promise<Probe> => {
  if (!fs.existsSync(bwrap)) return Promise.resolve({ ok: false, reason: "bwrap is not installed (apt-get install bubblewrap)" })
  if (!fs.existsSync(PERL)) return Promise.resolve({ ok: false, reason: `the bwrap launcher needs ${PERL} (Debian's perl-base)` })
  if (!launcherSupported() || seccompProgram() === undefined) return Promise.resolve({ ok: false, reason: `no seccomp filter for ${process.arch}` })
  if (suidDumpable() === "1") return Promise.resolve({ ok: false, reason: "fs.suid_dumpable is 1, so the runner's tools could read its memory and the turn token: set it to 0 (sysctl fs.suid_dumpable=0)" })
  return new Promise((resolve) => {
    try {
      // The real path: the launcher (and, as root, the drop to the sandbox user) then an unprivileged bwrap.
      const l = launch({ procsFiles: [], user: sandboxUser(), stage: [] }, bwrap, ["--unshare-all", "--unshare-user", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "/usr/bin/true"])
      execFile(l.command, l.args, { env: { ...LAUNCH_ENV }, cwd: "/", timeout: 10_000 }, (error) =>
        resolve(error === null ? { ok: true } : { ok: false, reason: "bwrap cannot create namespaces here (as the sandbox user)" }))
    } catch {
      resolve({ ok: false, reason: "bwrap cannot create namespaces here (as the sandbox user)" })
    }
  })
}

export const make = (options: BwrapOptions = {}): SandboxRuntime => {
  const bwrap = resolveCommand(options.bwrap ?? "bwrap")
  const node = options.node ?? process.execPath
  return {
    name: "bwrap",
    isolates: true,
    available: () => (probing ??= probe(bwrap)),
    start: async (spec) => {
      const seccomp = seccompProgram()
      if (seccomp === undefined || !launcherSupported()) throw new Error(`no seccomp filter for ${process.arch}`)
      if (!swept) {
        swept = true
        sweepCgroups()
      }
      const runnerNode = execOnlyNode(node, spec.runtimeDir)
      const user = sandboxUser()
      if (user !== undefined) {
        // The agent's folders become the sandbox user's; the host-only files it reads are handed
        // over one by one (their folder stays 0700 root).
        giveToSandbox(spec.workspaceDir, user)
        giveToSandbox(spec.sessionDir, user)
        if (spec.homeDir !== undefined) giveToSandbox(spec.homeDir, user)
        fs.lchownSync(spec.turnFile, user.uid, user.gid)
        fs.lchownSync(spec.ipcSocket, user.uid, user.gid)
        if (spec.gatewaySocket !== null) fs.lchownSync(spec.gatewaySocket, user.uid, user.gid)
      }
      const limits: CgroupResult = makeCgroup(`pynchy-${spec.sandboxId}`, { memoryMb: spec.memoryMb, maxProcesses: spec.maxProcesses })
      if (limits._tag === "Skipped" && (spec.memoryMb !== undefined || spec.maxProcesses !== undefined)) options.onLimitsSkipped?.(limits.reason)
      const cgroup = limits._tag === "Limited" ? limits.cgroup : undefined
      const stage = user === undefined ? [] : hostMounts(spec, node, runnerNode).map((m, i) => ({ source: m.source, name: `m${i}`, dir: m.dir }))
      const l = launch({ procsFiles: cgroup?.procsFiles ?? [], user, stage }, bwrap, ["--args", "3", NODE_INSIDE, ENTRY_INSIDE])
      try {
        return await spawnSandbox({
          command: l.command,
          args: l.args,
          argsFd: bwrapArgs(spec, node, { staged: user !== undefined, seccompFd: SECCOMP_FD, runnerNode }),
          dataFds: [seccomp],
          env: { ...LAUNCH_ENV },
          cwd: "/",
          hostDir: spec.hostDir,
          ...(cgroup !== undefined ? { onExit: cgroup.remove } : {})
        })
      } catch (e) {
        await cgroup?.remove()
        throw e
      }
    },
    kill: async (id) => killProcess(id, "bwrap"),
    isAlive: async (id) => processAlive(id, "bwrap")
  }
}

/** Whether `bwrap` is on PATH (auto selection). */
export const installed = (): boolean => {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
    if (dir !== "" && fs.existsSync(path.join(dir, "bwrap"))) return true
  }
  return false
}
