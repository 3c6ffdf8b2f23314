/**
 * The host's end of a turn's IPC: a unix socket in the session folder, one runner connection,
 * JSON lines decoded with the shared Schema. The host's first line on it is `turn_start`, which
 * carries the turn's gateway token: the runner connects before any tool runs, and a second
 * connection is refused, so the token reaches the runner and nothing else in the sandbox. A malformed or unknown line is answered with a
 * non-fatal `error` message, counted and dropped; nothing a runner sends can crash the host.
 */
import { Effect, Queue, Redacted, Schema } from "effect"
import type { Scope } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import { decodeRunnerLine, type HostMessage, hostLine, lineSplitter, type RunnerMessage } from "../protocol/ipc.js"

export class IpcListenFailed extends Schema.TaggedError<IpcListenFailed>()("IpcListenFailed", {
  socket: Schema.String,
  reason: Schema.String
}) {}

/** What the host reads: the runner's messages, then `closed` when its connection ends. */
export type IpcEvent = RunnerMessage | { readonly _tag: "closed" }

export interface IpcChannel {
  readonly events: Queue.Queue<IpcEvent>
  readonly send: (message: HostMessage) => Effect.Effect<void>
  /** Lines that did not decode (answered with an error, dropped). */
  readonly malformed: () => number
  /** Whether the runner connected: from then on its `closed` comes after all it wrote. */
  readonly connected: () => boolean
}

export interface IpcOptions {
  /** The turn's gateway token, sent in `turn_start` (none: `token: null`). */
  readonly token?: Redacted.Redacted<string> | null
}

export const listenIpc = (socketPath: string, options: IpcOptions = {}): Effect.Effect<IpcChannel, IpcListenFailed, Scope.Scope> =>
  Effect.gen(function* () {
    const events = yield* Effect.acquireRelease(Queue.unbounded<IpcEvent>(), Queue.shutdown)
    const offer = (e: IpcEvent) => {
      events.unsafeOffer(e)
    }
    let connection: net.Socket | undefined
    let malformed = 0
    const write = (socket: net.Socket, message: HostMessage) => {
      if (!socket.destroyed && socket.writable) socket.write(hostLine(message))
    }
    const server = net.createServer((socket) => {
      // One runner per turn: a second connection is refused.
      if (connection !== undefined) return socket.destroy()
      connection = socket
      write(socket, { _tag: "turn_start", token: options.token === undefined || options.token === null ? null : Redacted.value(options.token) })
      socket.setEncoding("utf8")
      const reject = (reason: string) => {
        malformed++
        write(socket, { _tag: "error", code: "invalid_message", message: reason, fatal: false, retryable: false })
      }
      socket.on("data", lineSplitter((line) => {
        const decoded = decodeRunnerLine(line)
        if (decoded._tag === "Left") reject(decoded.left.reason)
        else offer(decoded.right)
      }, () => reject("line too long")))
      socket.on("error", () => {})
      socket.on("close", () => offer({ _tag: "closed" }))
    })
    yield* Effect.acquireRelease(
      Effect.async<void, IpcListenFailed>((resume) => {
        fs.rmSync(socketPath, { force: true })
        server.once("error", (e: NodeJS.ErrnoException) => resume(Effect.fail(new IpcListenFailed({ socket: socketPath, reason: e.code ?? "error" }))))
        server.listen(socketPath, () => {
          fs.chmodSync(socketPath, 0o600)
          resume(Effect.void)
        })
      }),
      () =>
        Effect.sync(() => {
          connection?.destroy()
          server.close()
          fs.rmSync(socketPath, { force: true })
        })
    )
    return {
      events,
      send: (message) => Effect.sync(() => connection !== undefined && write(connection, message)),
      malformed: () => malformed,
      connected: () => connection !== undefined
    }
  })
