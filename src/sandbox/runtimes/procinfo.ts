/** Process identity for liveness: a pid plus its start time, so a recycled pid is not mistaken for ours. */
import * as fs from "node:fs"

/** Field 22 of /proc/<pid>/stat (clock ticks since boot), or undefined when the process is gone. */
export const startTimeOf = (pid: number): string | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return rest[19]
  } catch {
    return undefined
  }
}

const isZombie = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return true
  }
}

export const processId = (pid: number): string => `${pid}:${startTimeOf(pid) ?? "0"}`

export const parseProcessId = (id: string): { pid: number; start: string } | undefined => {
  const m = /^(\d+):(\d+)$/.exec(id)
  return m === null ? undefined : { pid: Number(m[1]), start: m[2]! }
}

export const processAlive = (id: string): boolean => {
  const p = parseProcessId(id)
  if (p === undefined) return false
  return startTimeOf(p.pid) === p.start && !isZombie(p.pid)
}

/** SIGKILL to the process group (the sandbox was started as its leader), then to the pid. */
export const killProcess = (id: string): void => {
  const p = parseProcessId(id)
  if (p === undefined || !processAlive(id)) return
  for (const target of [-p.pid, p.pid]) {
    try {
      process.kill(target, "SIGKILL")
    } catch {
      // already gone
    }
  }
}
