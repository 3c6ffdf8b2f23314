/**
 * llama.cpp's llama-server as a real local upstream: run from the Debian sid root
 * (scripts/system/sid-root.sh) under bwrap, serving the tiny generated GGUF
 * (scripts/system/llama-model.sh) on a free 127.0.0.1 port. Its text is noise; its protocols
 * (OpenAI chat, SSE, Anthropic messages, Responses) are real.
 */
import { Data, Effect, type Scope } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { hasCommand } from "./system.js"

const cache = () => process.env.PYNCHY_SYSTEM_CACHE ?? "/var/cache/pynchy"
export const sidRoot = () => path.join(cache(), "sid-root")
export const tinyModel = () => path.join(cache(), "models", "tiny.gguf")
const repo = path.resolve(import.meta.dirname, "../..")

const rootReady = () =>
  fs.existsSync(path.join(sidRoot(), ".pynchy-complete")) && fs.existsSync(path.join(sidRoot(), "usr/bin/llama-server")) && hasCommand("bwrap")

/**
 * Whether a llama-server test should be skipped: yes (with a message) when the sid root is
 * missing; with PYNCHY_REQUIRE_SYSTEM=1 (CI) a missing root is a failure. A present root without
 * the model gets the model generated (about a second).
 */
export const skipWithoutSidRoot = (): boolean => {
  const how = "run scripts/system/sid-root.sh and scripts/system/llama-model.sh"
  if (!rootReady()) {
    if (process.env.PYNCHY_REQUIRE_SYSTEM === "1") throw new Error(`the Debian sid root with llama-server is required (PYNCHY_REQUIRE_SYSTEM=1) but missing at ${sidRoot()}: ${how}`)
    console.warn(`skipping: no Debian sid root with llama-server at ${sidRoot()} (${how})`)
    return true
  }
  if (!fs.existsSync(tinyModel())) execFileSync(path.join(repo, "scripts/system/llama-model.sh"), { stdio: "ignore" })
  return false
}

const freePort = () =>
  Effect.async<number>((resume) => {
    const s = net.createServer()
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resume(Effect.succeed(port)))
    })
  })

/** llama-server did not come up; `output` is the tail of what it wrote. */
export class LlamaStartFailed extends Data.TaggedError("LlamaStartFailed")<{ readonly reason: string; readonly output: string }> {
  override get message() {
    return `llama-server ${this.reason}:\n${this.output}`
  }
}

export interface Llama {
  /** OpenAI-style base URL, `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string
  readonly port: number
  /** What the server wrote, for a failing test's message. */
  readonly output: () => string
}

const STARTUP_MS = 30_000

/** Starts llama-server in the current scope; it is stopped (SIGTERM, then SIGKILL) when the scope closes. */
export const startLlama: Effect.Effect<Llama, LlamaStartFailed, Scope.Scope> = Effect.gen(function* () {
  const port = yield* freePort()
  const root = sidRoot()
  const models = path.dirname(tinyModel())
  let output = ""
  const child = yield* Effect.acquireRelease(
    Effect.sync(() =>
      spawn("bwrap", [
        "--ro-bind", root, "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        "--ro-bind", models, "/tmp/models", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
        "/usr/bin/env", "-i", "PATH=/usr/bin:/bin",
        "llama-server", "-m", `/tmp/models/${path.basename(tinyModel())}`, "--host", "127.0.0.1", "--port", String(port),
        "-t", "1", "-c", "2048", "--jinja", "--no-webui", "--alias", "tiny"
      ], { stdio: ["ignore", "pipe", "pipe"] })
    ),
    (child: ChildProcess) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        const kill = setTimeout(() => child.kill("SIGKILL"), 5_000)
        child.once("exit", () => {
          clearTimeout(kill)
          resume(Effect.void)
        })
        child.kill("SIGTERM")
      })
  )
  yield* Effect.async<void, LlamaStartFailed>((resume) => {
    const onData = (b: Buffer) => {
      output = (output + b.toString("utf8")).slice(-100_000)
      if (output.includes(`listening on http://127.0.0.1:${port}`)) done(undefined)
    }
    const timer = setTimeout(() => done(new LlamaStartFailed({ reason: `did not start in ${STARTUP_MS} ms`, output: output.slice(-2000) })), STARTUP_MS)
    const onExit = (code: number | null) => done(new LlamaStartFailed({ reason: `exited (${code}) before listening`, output: output.slice(-2000) }))
    const done = (e: LlamaStartFailed | undefined) => {
      clearTimeout(timer)
      child.off("exit", onExit)
      resume(e ? Effect.fail(e) : Effect.void)
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", onExit)
  })
  return { baseUrl: `http://127.0.0.1:${port}/v1`, port, output: () => output }
})
