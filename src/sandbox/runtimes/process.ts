/**
 * A plain child process: the same runner, a cleared environment, cwd the session folder. It does
 * not isolate anything (`pynchy doctor` says so); it is for machines without bwrap.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { isSafeName, runnerEnv, type SandboxRuntime } from "../runtime.js"
import { killProcess, LAUNCH_MARKER, processAlive } from "./procinfo.js"
import { spawnSandbox } from "./spawn.js"

export const make = (options: { readonly node?: string } = {}): SandboxRuntime => ({
  name: "process",
  isolates: false,
  available: async () => ({ ok: true }),
  start: async (spec) => {
    // One skills folder of links, so the runner finds every skill at `<skills dir>/<name>`.
    const skillsDir = path.join(spec.sessionDir, ".skills")
    fs.mkdirSync(skillsDir, { recursive: true })
    for (const skill of spec.skills) {
      if (!isSafeName(skill.name)) continue
      const link = path.join(skillsDir, skill.name)
      fs.rmSync(link, { force: true, recursive: false })
      fs.symlinkSync(skill.path, link)
    }
    const env = runnerEnv(spec, {
      PYNCHY_TURN_FILE: spec.turnFile,
      PYNCHY_SESSION_DIR: spec.sessionDir,
      PYNCHY_WORKSPACE_DIR: spec.workspaceDir,
      PYNCHY_SKILLS_DIR: skillsDir,
      PYNCHY_IPC_SOCKET: spec.ipcSocket,
      PYNCHY_GATEWAY_SOCKET: spec.gatewaySocket ?? ""
    }, spec.sessionDir, spec.coreModule, spec.homeDir)
    return spawnSandbox({
      command: options.node ?? process.execPath,
      args: [spec.entry],
      // The marker lets kill and isAlive prove a process is one of ours before they act on an id.
      env: { ...env, [LAUNCH_MARKER]: "process" },
      cwd: spec.sessionDir,
      hostDir: spec.hostDir
    })
  },
  kill: async (id) => killProcess(id, "process"),
  isAlive: async (id) => processAlive(id, "process")
})
