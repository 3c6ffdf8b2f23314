/**
 * Process identity for liveness and kill: a pid plus its start time, so a recycled pid is not
 * mistaken for ours. An id can be forged (it was once read from an agent-writable file), so before
 * a signal the process must prove it is a sandbox this host's runtimes started: its pid is above 1
 * and not ours, its start time matches, it leads its own session and process group (spawned
 * detached), and its environment carries the runtime's launch marker (`PYNCHY_SANDBOX=<runtime>`,
 * set at spawn). Only then is its group signalled, and never a group the host did not create.
 */
import * as fs from "node:fs"

/** The variable every sandbox launcher is spawned with; its value names the runtime. */
export const LAUNCH_MARKER = "PYNCHY_SANDBOX"

interface Stat {
  readonly state: string
  readonly pgrp: number
  readonly session: number
  readonly start: string
}

const statOf = (pid: number): Stat | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return { state: rest[0]!, pgrp: Number(rest[2]), session: Number(rest[3]), start: rest[19]! }
  } catch {
    return undefined
  }
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot), or undefined when the process is gone. */
export const startTimeOf = (pid: number): string | undefined => statOf(pid)?.start

export const processId = (pid: number): string => `${pid}:${startTimeOf(pid) ?? "0"}`

export const parseProcessId = (id: string): { pid: number; start: string } | undefined => {
  const m = /^(\d{1,10}):(\d{1,20})$/.exec(id)
  return m === null ? undefined : { pid: Number(m[1]), start: m[2]! }
}

const pause = new Int32Array(new SharedArrayBuffer(4))

const hasMarker = (pid: number, runtime: string): boolean => {
  // A process in the middle of execve (the launcher becoming bwrap) shows an empty environment for
  // a moment; read again, briefly, rather than call a live sandbox dead.
  for (let attempt = 0; attempt < 50; attempt++) {
    let environ: string
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, "latin1")
    } catch {
      return false
    }
    if (environ.length > 0) return environ.split("\0").includes(`${LAUNCH_MARKER}=${runtime}`)
    Atomics.wait(pause, 0, 0, 1)
  }
  return false
}

/** The pid of the id when it is a live sandbox that `runtime` started; undefined otherwise. */
export const provenSandbox = (id: string, runtime: string): number | undefined => {
  const p = parseProcessId(id)
  if (p === undefined || p.pid <= 1 || p.pid === process.pid || p.pid > 0x3fffffff) return undefined
  const stat = statOf(p.pid)
  if (stat === undefined || stat.start !== p.start || stat.state === "Z") return undefined
  if (stat.pgrp !== p.pid || stat.session !== p.pid) return undefined
  if (!hasMarker(p.pid, runtime)) return undefined
  return p.pid
}

export const processAlive = (id: string, runtime: string): boolean => provenSandbox(id, runtime) !== undefined

/** SIGKILL to the sandbox's process group, then to its pid; nothing when the id is not proven ours. */
export const killProcess = (id: string, runtime: string, signal: (target: number, sig: NodeJS.Signals) => void = (t, s) => process.kill(t, s)): void => {
  const pid = provenSandbox(id, runtime)
  if (pid === undefined) return
  for (const target of [-pid, pid]) {
    try {
      signal(target, "SIGKILL")
    } catch {
      // already gone
    }
  }
}
