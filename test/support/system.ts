import { execFileSync } from "node:child_process"

/** True when the command exists on PATH. */
export const hasCommand = (cmd: string): boolean => {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/**
 * Whether a test that needs a system component should be skipped. Where it is missing, the test
 * skips with a message naming it; with PYNCHY_REQUIRE_SYSTEM=1 (CI) a missing component is a failure.
 */
export const skipWithout = (cmd: string, install: string): boolean => {
  if (hasCommand(cmd)) return false
  if (process.env.PYNCHY_REQUIRE_SYSTEM === "1") {
    throw new Error(`${cmd} is required (PYNCHY_REQUIRE_SYSTEM=1) but not installed: ${install}`)
  }
  console.warn(`skipping: ${cmd} is not installed (${install})`)
  return true
}
