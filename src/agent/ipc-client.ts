/**
 * The runner's end of the IPC socket: typed lines out, tool results matched to their calls. It is
 * ready once the host's `turn_start` arrived, with the turn's gateway token: the token is never in
 * the runner's environment or command line, which other processes in the sandbox could read.
 */
import * as Either from "effect/Either"
import * as net from "node:net"
import { decodeHostLine, type HostMessage, lineSplitter, type RunnerMessage, runnerLine } from "../protocol/ipc.js"
import type { ToolOutcome } from "./cores/types.js"

export interface IpcClient {
  /** The turn's gateway token (null without a provider); hand it to nothing a tool could read. */
  readonly token: string | null
  readonly send: (message: RunnerMessage) => void
  readonly callTool: (tool: string, input: unknown) => Promise<ToolOutcome>
  /** Flushes and closes. */
  readonly close: () => Promise<void>
}

export const connectIpc = (socketPath: string, onHostClosed: () => void, onNote: (note: string) => void): Promise<IpcClient> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(socketPath)
    const pending = new Map<string, (outcome: ToolOutcome) => void>()
    let next = 0
    let closing = false
    const send = (message: RunnerMessage) => {
      if (!socket.destroyed) socket.write(runnerLine(message))
    }
    let started = false
    const client = (token: string | null): IpcClient => ({
      token,
      send,
      callTool: (tool, input) =>
        new Promise((wake) => {
          const callId = `c${++next}`
          pending.set(callId, wake)
          send({ _tag: "tool_call", callId, tool, input })
        }),
      close: () =>
        new Promise((done) => {
          closing = true
          socket.end(() => done())
        })
    })
    const onMessage = (message: HostMessage) => {
      if (message._tag === "turn_start") {
        if (started) return onNote("a second turn_start was ignored")
        started = true
        resolve(client(message.token))
      } else if (message._tag === "tool_result") {
        const wake = pending.get(message.callId)
        pending.delete(message.callId)
        wake?.({ ok: message.ok, output: message.output })
      } else {
        onNote(`host error ${message.code}`)
      }
    }
    socket.setEncoding("utf8")
    socket.on("data", lineSplitter(
      (line) =>
        Either.match(decodeHostLine(line), {
          onLeft: (bad) => send({ _tag: "error", code: "invalid_message", message: bad.reason, fatal: false, retryable: false }),
          onRight: onMessage
        }),
      () => send({ _tag: "error", code: "invalid_message", message: "line too long", fatal: false, retryable: false })
    ))
    socket.once("error", (e) => reject(e))
    socket.on("close", () => {
      for (const wake of pending.values()) wake({ ok: false, output: { code: "ipc_closed", message: "the host closed the connection" } })
      pending.clear()
      if (!started) reject(new Error("the host closed the connection before the turn started"))
      else if (!closing) onHostClosed()
    })
  })
