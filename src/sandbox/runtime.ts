/**
 * What a container runtime does for the sandbox executor. It satisfies the plugin contract
 * (`containerRuntime`: name, start, kill, isAlive returning Promises), so a plugin can bring its
 * own; the built-ins are bwrap, process and docker.
 */
import type { ContainerRuntime } from "../contracts/plugin.js"

export interface SandboxSpec {
  /** The host's id for this sandbox (`[a-f0-9]{12}`), used for names (cgroup, container). */
  readonly sandboxId: string
  /** Host folders the agent may write; the runtime decides where the runner sees them. */
  readonly workspaceDir: string
  /**
   * Folders inside the workspace (relative, each a real folder the host made) that the sandbox
   * sees read-only, so a turn cannot change them for later turns: the workspace's `skills`.
   */
  readonly workspaceReadOnly?: ReadonlyArray<string> | undefined
  readonly sessionDir: string
  /**
   * The host-only folder of this sandbox (0700, never mounted): `runner.log` is written here.
   * Nothing the agent can write is ever opened from it.
   */
  readonly hostDir: string
  /** The turn spec (a host-only file), mounted read-only at `PYNCHY_TURN_FILE`. */
  readonly turnFile: string
  /** Skill folders to mount read-only, each at `<skills dir>/<name>`. */
  readonly skills: ReadonlyArray<{ readonly name: string; readonly path: string }>
  readonly ipcSocket: string
  /** The sandbox's own gateway socket (Gateway.listenForSandbox), mounted at `PYNCHY_GATEWAY_SOCKET`; null without a model. */
  readonly gatewaySocket: string | null
  /** The script node runs (the bundled runner, or a test probe); mounted read-only. */
  readonly entry: string
  /** A plugin's agent core module (host path), mounted read-only at `PYNCHY_CORE_MODULE`. */
  readonly coreModule?: string | undefined
  /** The `node_modules` folder a plugin core's module imports from (host path), mounted read-only beside it. */
  readonly corePackages?: string | undefined
  /**
   * The conversation's durable folder for a plugin core (host path, agent-writable): its HOME and
   * session state, kept across turns until `/new`. Mounted at `PYNCHY_HOME_DIR`.
   */
  readonly homeDir?: string | undefined
  /**
   * A host-only folder kept across turns (`<dataDir>/runtime`) where a runtime keeps what it
   * prepares once (bwrap: the exec-only node, exec-only.ts); a private temp folder when absent.
   */
  readonly runtimeDir?: string | undefined
  /** The only variables the runner gets besides PATH, HOME and the PYNCHY_* paths (never a secret: the token comes over IPC). */
  readonly env: Readonly<Record<string, string>>
  readonly memoryMb?: number | undefined
  readonly maxProcesses?: number | undefined
}

export interface SandboxExit {
  readonly code: number | null
  readonly signal: string | null
}

export interface SandboxHandle {
  /** The runtime's liveness id (`<pid>:<starttime>` or a container name). */
  readonly id: string
  /** Settles when the sandbox has ended (never rejects). */
  readonly exited: Promise<SandboxExit>
}

export interface SandboxRuntime extends ContainerRuntime {
  readonly name: string
  start(spec: SandboxSpec): Promise<SandboxHandle>
  /** Kills the sandbox and everything in it; a dead or unknown id is not an error. */
  kill(id: string): Promise<void>
  isAlive(id: string): Promise<boolean>
  /** Whether it can run here; `reason` says why not (for auto selection and `pynchy doctor`). */
  available?(): Promise<{ readonly ok: boolean; readonly reason?: string }>
  /** False for runtimes that do not isolate (doctor warns). */
  readonly isolates?: boolean
}

/** The env variables through which the runner finds its folders and sockets. */
export interface RunnerPaths {
  readonly PYNCHY_TURN_FILE: string
  readonly PYNCHY_SESSION_DIR: string
  readonly PYNCHY_WORKSPACE_DIR: string
  readonly PYNCHY_SKILLS_DIR: string
  readonly PYNCHY_IPC_SOCKET: string
  readonly PYNCHY_GATEWAY_SOCKET: string
}

/** The paths inside bwrap and docker. */
export const SANDBOX_PATHS: RunnerPaths = {
  PYNCHY_TURN_FILE: "/run/turn.json",
  PYNCHY_SESSION_DIR: "/session",
  PYNCHY_WORKSPACE_DIR: "/workspace",
  PYNCHY_SKILLS_DIR: "/skills",
  PYNCHY_IPC_SOCKET: "/run/ipc.sock",
  PYNCHY_GATEWAY_SOCKET: "/run/gateway.sock"
}

export const ENTRY_INSIDE = "/opt/pynchy/runner.mjs"
/** Where bwrap mounts the exec-only node the runner is executed from (runtimes/exec-only.ts). */
export const NODE_INSIDE = "/opt/pynchy/node"
/** Where bwrap and docker mount a plugin core's module (`.mjs`: imported as an ES module). */
export const CORE_INSIDE = "/opt/pynchy/core.mjs"
/** Where a plugin core's packages are mounted: Node resolves the module's bare imports there. */
export const PACKAGES_INSIDE = "/opt/pynchy/node_modules"
/** Where bwrap and docker mount the conversation's durable folder of a plugin core. */
export const HOME_INSIDE = "/home/agent"

/**
 * The environment a runner starts with: nothing inherited. `coreModule` is where the runner finds
 * the plugin core's module and `homeDir` its durable folder (the runtime's mount points, or the
 * host paths where nothing is mounted).
 */
export const runnerEnv = (spec: SandboxSpec, paths: RunnerPaths, home: string, coreModule = CORE_INSIDE, homeDir = HOME_INSIDE): Record<string, string> => ({
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: home,
  ...spec.env,
  ...paths,
  ...(spec.gatewaySocket === null ? { PYNCHY_GATEWAY_SOCKET: "" } : {}),
  ...(spec.coreModule !== undefined ? { PYNCHY_CORE_MODULE: coreModule } : {}),
  ...(spec.homeDir !== undefined ? { PYNCHY_HOME_DIR: homeDir } : {})
})

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
/** Skill names become mount points: only plain names. */
export const isSafeName = (name: string) => SAFE_NAME.test(name) && name !== "." && name !== ".."
