/**
 * Memory and process limits through cgroups, where the host may write them. A child cgroup is made
 * under the host's own (v1: per controller; v2: one unified folder), limits are written, and the
 * launcher moves itself in before it execs the sandbox, so nothing runs outside the limits.
 * Where that is not writable, the limits are skipped and the caller logs why.
 *
 * Removal is reliable: a cgroup cannot be removed while a process is in it, and the sandbox's
 * processes outlive the launcher by a moment (they die with it, asynchronously). `remove` waits
 * for the cgroup to empty, kills what is still in it (every process in the cgroup is the
 * sandbox's), and retries; `sweep` removes empty `pynchy-*` cgroups left by a host that died.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"

export interface CgroupLimits {
  readonly memoryMb?: number | undefined
  readonly maxProcesses?: number | undefined
}

export interface Cgroup {
  /** The cgroup folders (one per v1 controller, or the unified one). */
  readonly dirs: ReadonlyArray<string>
  /** `cgroup.procs` files the launcher writes its pid into. */
  readonly procsFiles: ReadonlyArray<string>
  /** Empties and removes the folders (after the sandbox has ended); resolves whether all are gone. */
  readonly remove: () => Promise<boolean>
}

export type CgroupResult = { readonly _tag: "Limited"; readonly cgroup: Cgroup } | { readonly _tag: "Skipped"; readonly reason: string }

const ROOT = "/sys/fs/cgroup"
export const CGROUP_PREFIX = "pynchy-"
const SWEEP_MIN_AGE_MS = 60_000

const ownPaths = (): Map<string, string> => {
  const paths = new Map<string, string>()
  for (const line of fs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line)
    if (m === null) continue
    for (const controller of m[1] === "" ? ["unified"] : m[1]!.split(",")) paths.set(controller, m[2]!)
  }
  return paths
}

const pureV2 = () => fs.existsSync(path.join(ROOT, "cgroup.controllers"))

/** The folders under which this host makes its cgroups (the host's own, per controller). */
export const parentDirs = (): Array<string> => {
  const own = ownPaths()
  return pureV2()
    ? [path.join(ROOT, own.get("unified") ?? "/")]
    : [path.join(ROOT, "memory", own.get("memory") ?? "/"), path.join(ROOT, "pids", own.get("pids") ?? "/")]
}

const write = (file: string, value: string) => fs.writeFileSync(file, value)

const pidsIn = (dir: string): Array<number> => {
  try {
    return fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter((l) => l !== "").map(Number)
  } catch {
    return []
  }
}

const tryRmdir = (dir: string): boolean => {
  try {
    fs.rmdirSync(dir)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT"
  }
}

/** Removes one cgroup folder: wait for it to empty (its processes are dying), then kill what stays, then retry. */
export const removeCgroupDir = async (dir: string, options: { readonly graceMs?: number; readonly deadlineMs?: number } = {}): Promise<boolean> => {
  const grace = options.graceMs ?? 1_000
  const deadline = options.deadlineMs ?? 10_000
  let waited = 0
  let delay = 2
  while (true) {
    if (tryRmdir(dir)) return true
    if (waited >= grace) {
      // v2 kills the whole cgroup at once; v1 has no such file, so each listed process is killed.
      if (fs.existsSync(path.join(dir, "cgroup.kill"))) {
        try {
          write(path.join(dir, "cgroup.kill"), "1")
        } catch {
          // gone meanwhile
        }
      } else {
        for (const pid of pidsIn(dir)) {
          if (pid > 1 && pid !== process.pid) {
            try {
              process.kill(pid, "SIGKILL")
            } catch {
              // already gone
            }
          }
        }
      }
    }
    if (waited >= deadline) return tryRmdir(dir)
    await sleep(delay)
    waited += delay
    delay = Math.min(delay * 2, 50)
  }
}

export const makeCgroup = (name: string, limits: CgroupLimits): CgroupResult => {
  if (limits.memoryMb === undefined && limits.maxProcesses === undefined) return { _tag: "Skipped", reason: "no limits set" }
  const made: Array<string> = []
  const remove = async () => {
    let ok = true
    for (const dir of [...made].reverse()) ok = (await removeCgroupDir(dir)) && ok
    return ok
  }
  try {
    const procs: Array<string> = []
    const child = (dir: string) => {
      const d = path.join(dir, name)
      fs.mkdirSync(d)
      made.push(d)
      procs.push(path.join(d, "cgroup.procs"))
      return d
    }
    const [first, second] = parentDirs()
    if (pureV2()) {
      const d = child(first!)
      if (limits.memoryMb !== undefined) write(path.join(d, "memory.max"), String(limits.memoryMb * 1024 * 1024))
      if (limits.maxProcesses !== undefined) write(path.join(d, "pids.max"), String(limits.maxProcesses))
    } else {
      if (limits.memoryMb !== undefined) write(path.join(child(first!), "memory.limit_in_bytes"), String(limits.memoryMb * 1024 * 1024))
      if (limits.maxProcesses !== undefined) write(path.join(child(second!), "pids.max"), String(limits.maxProcesses))
    }
    return { _tag: "Limited", cgroup: { dirs: made, procsFiles: procs, remove } }
  } catch (e) {
    for (const dir of [...made].reverse()) tryRmdir(dir)
    return { _tag: "Skipped", reason: `cgroups not writable here (${(e as NodeJS.ErrnoException).code ?? "error"})` }
  }
}

/**
 * Removes the empty `pynchy-*` cgroups under this host's own, left by a host that died before it
 * cleaned up. A non-empty one belongs to a sandbox still running (the executor ends those) and stays.
 */
export const sweepCgroups = (): number => {
  let removed = 0
  let parents: Array<string>
  try {
    parents = parentDirs()
  } catch {
    return 0
  }
  for (const parent of parents) {
    let names: Array<string>
    try {
      names = fs.readdirSync(parent).filter((n) => n.startsWith(CGROUP_PREFIX))
    } catch {
      continue
    }
    for (const n of names) {
      const dir = path.join(parent, n)
      // A young one may be another host's, made a moment before its launcher joins it.
      let young = true
      try {
        // The host's one Date.now(): a folder's age is the kernel's ctime against the wall clock,
        // in a container runtime's Promise API (no Effect runtime, so no Clock to ask).
        young = fs.statSync(dir).ctimeMs > Date.now() - SWEEP_MIN_AGE_MS
      } catch {
        continue
      }
      if (!young && pidsIn(dir).length === 0 && tryRmdir(dir)) removed++
    }
  }
  return removed
}
