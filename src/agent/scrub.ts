/**
 * The turn token must not outlive its read: the bash tool's commands run as the runner's user,
 * and could read it from the runner's environment. `delete process.env` keeps it from children,
 * but /proc/<runner>/environ shows the environment block the process started with, so those
 * bytes are overwritten in place, through /proc/self/mem (a process may write its own memory).
 */
import * as fs from "node:fs"

/** Reads and removes `name` from the environment; true in `scrubbed` when the start-up copy was overwritten too. */
export const takeSecretEnv = (name: string): { readonly value: string; readonly scrubbed: boolean } => {
  const value = process.env[name] ?? ""
  delete process.env[name]
  if (value === "") return { value, scrubbed: true }
  return { value, scrubbed: overwriteInitialEnv(`${name}=${value}`) }
}

const overwriteInitialEnv = (entry: string): boolean => {
  let fd: number | undefined
  try {
    // Fields 50 and 51 of /proc/self/stat (env_start, env_end): where the start-up environment lies (after the
    // command name in parentheses, which may hold spaces).
    const stat = fs.readFileSync("/proc/self/stat", "latin1")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const start = Number(fields[50 - 3])
    const end = Number(fields[51 - 3])
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end <= start || end - start > 4 * 1024 * 1024) return false
    fd = fs.openSync("/proc/self/mem", "r+")
    const block = Buffer.alloc(end - start)
    fs.readSync(fd, block, 0, block.length, start)
    const needle = Buffer.from(entry, "latin1")
    let found = false
    for (let at = block.indexOf(needle); at >= 0; at = block.indexOf(needle, at + needle.length)) {
      // Keep the name (so the block still parses) and blank the value.
      const eq = entry.indexOf("=") + 1
      fs.writeSync(fd, Buffer.alloc(needle.length - eq, "x"), 0, needle.length - eq, start + at + eq)
      found = true
    }
    return found
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}
