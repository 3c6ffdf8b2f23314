/**
 * Whether the tools this runner starts could read its memory. Under bwrap the runner is executed
 * from a copy of node it may run but not read, so the kernel marks it non-dumpable at exec: its
 * /proc entries then belong to root (shown as the overflow uid in the sandbox) and every
 * ptrace-class access by a process without CAP_SYS_PTRACE (memory, environment, descriptors) is
 * refused. A runner that finds its /proc entries its own was not protected (a kernel with
 * `fs.suid_dumpable = 1`, or a runtime that does not do this) and must not use the turn token.
 */
import * as fs from "node:fs"

export const runnerTraceable = (): boolean => {
  try {
    return fs.statSync("/proc/self/mem").uid === process.getuid?.()
  } catch {
    return true
  }
}
