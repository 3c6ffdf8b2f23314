/**
 * Memory and process limits through cgroups, where the host may write them. A child cgroup is made
 * under the host's own (v1: per controller; v2: one unified folder), limits are written, and the
 * launcher shell moves itself in before it execs the sandbox, so nothing runs outside the limits.
 * Where that is not writable, the limits are skipped and the caller logs why.
 */
import * as fs from "node:fs"
import * as path from "node:path"

export interface CgroupLimits {
  readonly memoryMb?: number | undefined
  readonly maxProcesses?: number | undefined
}

export interface Cgroup {
  /** `cgroup.procs` files the launcher writes its pid into. */
  readonly procsFiles: ReadonlyArray<string>
  /** Removes the folders (after the sandbox has ended). */
  readonly remove: () => void
}

export type CgroupResult = { readonly _tag: "Limited"; readonly cgroup: Cgroup } | { readonly _tag: "Skipped"; readonly reason: string }

const ROOT = "/sys/fs/cgroup"

const ownPaths = (): Map<string, string> => {
  const paths = new Map<string, string>()
  for (const line of fs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line)
    if (m === null) continue
    for (const controller of m[1] === "" ? ["unified"] : m[1]!.split(",")) paths.set(controller, m[2]!)
  }
  return paths
}

const write = (file: string, value: string) => fs.writeFileSync(file, value)

export const makeCgroup = (name: string, limits: CgroupLimits): CgroupResult => {
  if (limits.memoryMb === undefined && limits.maxProcesses === undefined) return { _tag: "Skipped", reason: "no limits set" }
  const made: Array<string> = []
  const remove = () => {
    for (const dir of made.reverse()) {
      try {
        fs.rmdirSync(dir)
      } catch {
        // still busy or gone: the kernel frees an empty cgroup when it is removed later
      }
    }
  }
  try {
    const own = ownPaths()
    const pureV2 = fs.existsSync(path.join(ROOT, "cgroup.controllers"))
    const procs: Array<string> = []
    const child = (dir: string) => {
      const d = path.join(dir, name)
      fs.mkdirSync(d)
      made.push(d)
      procs.push(path.join(d, "cgroup.procs"))
      return d
    }
    if (pureV2) {
      const d = child(path.join(ROOT, own.get("unified") ?? "/"))
      if (limits.memoryMb !== undefined) write(path.join(d, "memory.max"), String(limits.memoryMb * 1024 * 1024))
      if (limits.maxProcesses !== undefined) write(path.join(d, "pids.max"), String(limits.maxProcesses))
    } else {
      if (limits.memoryMb !== undefined) {
        const d = child(path.join(ROOT, "memory", own.get("memory") ?? "/"))
        write(path.join(d, "memory.limit_in_bytes"), String(limits.memoryMb * 1024 * 1024))
      }
      if (limits.maxProcesses !== undefined) {
        const d = child(path.join(ROOT, "pids", own.get("pids") ?? "/"))
        write(path.join(d, "pids.max"), String(limits.maxProcesses))
      }
    }
    return { _tag: "Limited", cgroup: { procsFiles: procs, remove } }
  } catch (e) {
    remove()
    return { _tag: "Skipped", reason: `cgroups not writable here (${(e as NodeJS.ErrnoException).code ?? "error"})` }
  }
}

/** A POSIX shell prefix that moves itself into the cgroup(s), then execs the real command. */
export const launcherArgs = (cgroup: Cgroup | undefined, command: string, args: ReadonlyArray<string>): { command: string; args: Array<string> } =>
  cgroup === undefined || cgroup.procsFiles.length === 0
    ? { command, args: [...args] }
    : {
      command: "/bin/sh",
      args: ["-c", `for f in ${cgroup.procsFiles.map((f) => `'${f}'`).join(" ")}; do echo $$ > "$f" || exit 97; done; exec "$@"`, "pynchy-sandbox", command, ...args]
    }
