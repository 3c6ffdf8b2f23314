/**
 * The IPC contract from both sides: every message round-trips through the shared Schema; the
 * host answers malformed or unknown lines with a non-fatal error and keeps serving; the runner's
 * client does the same and matches tool results to their calls.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Either, FastCheck as fc, Queue, Redacted, Schema } from "effect"
import * as net from "node:net"
import * as path from "node:path"
import { connectIpc } from "../../src/agent/ipc-client.js"
import {
  decodeHostLine,
  decodeRunnerLine,
  HostMessage,
  hostLine,
  lineSplitter,
  RunnerMessage,
  runnerLine
} from "../../src/protocol/ipc.js"
import { listenIpc } from "../../src/sandbox/IpcServer.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"

const socketPath = () => path.join(tempDir("pynchy-ipc-"), "ipc.sock")

/** A raw client: writes lines, collects the lines it receives. */
const rawClient = (file: string) =>
  Effect.acquireRelease(
    Effect.async<{ socket: net.Socket; received: Array<string> }>((resume) => {
      const received: Array<string> = []
      const socket = net.connect(file, () => resume(Effect.succeed({ socket, received })))
      socket.setEncoding("utf8")
      socket.on("data", lineSplitter((l) => received.push(l), () => {}))
    }),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )

describe("IPC schema", () => {
  it.prop("every runner message survives encode → line → decode", [Arbitrary.make(RunnerMessage)], ([m]) => {
    const back = decodeRunnerLine(runnerLine(m).trimEnd())
    return Either.isRight(back) && back.right._tag === m._tag
  })

  it.prop("every host message survives encode → line → decode", [Arbitrary.make(HostMessage)], ([m]) => {
    const back = decodeHostLine(hostLine(m).trimEnd())
    return Either.isRight(back) && back.right._tag === m._tag
  })

  it.prop("no string makes the decoder throw", [fc.string()], ([s]) => {
    decodeRunnerLine(s)
    decodeHostLine(s)
    return true
  })

  it("the reason of a malformed line names the problem, never the content", () => {
    const secret = "sk-secret-value"
    for (const line of [`{"_tag":"reply","text":5,"x":"${secret}"}`, `not json ${secret}`, `{"_tag":"${secret}"}`]) {
      const r = decodeRunnerLine(line)
      assert.isTrue(Either.isLeft(r))
      if (Either.isLeft(r)) assert.notInclude(r.left.reason, "sk-secret")
    }
  })
})

describe("IPC host side", () => {
  it.scopedLive("valid lines arrive as typed events; malformed ones get an error back and the host keeps serving", () =>
    Effect.gen(function* () {
      const file = socketPath()
      const ipc = yield* listenIpc(file)
      const client = yield* rawClient(file)
      client.socket.write("this is not json\n")
      client.socket.write(`{"_tag":"launch_missiles"}\n`)
      client.socket.write(`{"_tag":"reply","text":42}\n`)
      client.socket.write(runnerLine({ _tag: "reply", text: "hello" }))
      client.socket.write(runnerLine({ _tag: "tool_call", callId: "c1", tool: "hello__greet", input: { name: "x" } }))
      const first = yield* Queue.take(ipc.events)
      assert.deepStrictEqual(first, { _tag: "reply", text: "hello" })
      const second = yield* Queue.take(ipc.events)
      assert.strictEqual(second._tag, "tool_call")
      // The host's first line is turn_start (no token was given), then its three error answers.
      yield* eventually(() => client.received.length >= 4 || undefined, { label: "the host's three error answers" })
      assert.deepStrictEqual(JSON.parse(client.received.shift()!), { _tag: "turn_start", token: null })
      const errors = client.received.map((l) => decodeHostLine(l))
      for (const e of errors) {
        assert.isTrue(Either.isRight(e))
        if (Either.isRight(e)) {
          assert.strictEqual(e.right._tag, "error")
          if (e.right._tag === "error") {
            assert.strictEqual(e.right.code, "invalid_message")
            assert.isFalse(e.right.fatal)
          }
        }
      }
      assert.strictEqual(ipc.malformed(), 3)
      yield* ipc.send({ _tag: "tool_result", callId: "c1", ok: true, output: { text: "hi" } })
      yield* eventually(() => client.received.length >= 4 || undefined, { label: "the tool result" })
      assert.deepStrictEqual(JSON.parse(client.received[3]!), { _tag: "tool_result", callId: "c1", ok: true, output: { text: "hi" } })
      client.socket.destroy()
      const closed = yield* Queue.take(ipc.events)
      assert.strictEqual(closed._tag, "closed")
    }))

  it.scopedLive("the first connection gets the turn token in turn_start; a second connection is refused and gets nothing", () =>
    Effect.gen(function* () {
      const file = socketPath()
      const ipc = yield* listenIpc(file, { token: Redacted.make("pgw_first_only") })
      const runner = yield* rawClient(file)
      yield* eventually(() => runner.received.length >= 1 || undefined, { label: "turn_start" })
      assert.deepStrictEqual(JSON.parse(runner.received[0]!), { _tag: "turn_start", token: "pgw_first_only" })
      const other = yield* rawClient(file)
      yield* Effect.async<void>((resume) => {
        if (other.socket.destroyed) return resume(Effect.void)
        other.socket.once("close", () => resume(Effect.void))
      })
      assert.isTrue(other.socket.destroyed)
      assert.deepStrictEqual(other.received, [])
      assert.strictEqual(ipc.malformed(), 0)
    }))
})

describe("IPC runner side", () => {
  it.scopedLive("tool results are matched to their calls; a malformed host line is answered with an error", () =>
    Effect.gen(function* () {
      const file = socketPath()
      const fromRunner: Array<string> = []
      const server = net.createServer((socket) => {
        socket.setEncoding("utf8")
        socket.write(hostLine({ _tag: "turn_start", token: "pgw_test" }))
        socket.write("garbage\n")
        socket.on("data", lineSplitter((line) => {
          fromRunner.push(line)
          const m = decodeRunnerLine(line)
          if (Either.isRight(m) && m.right._tag === "tool_call") {
            socket.write(hostLine({ _tag: "tool_result", callId: m.right.callId, ok: true, output: { echoed: m.right.input } }))
          }
        }, () => {}))
      })
      yield* Effect.acquireRelease(Effect.async<void>((r) => {
        server.listen(file, () => r(Effect.void))
      }), () => Effect.sync(() => server.close()))
      const client = yield* Effect.promise(() => connectIpc(file, () => {}, () => {}))
      assert.strictEqual(client.token, "pgw_test")
      const [a, b] = yield* Effect.promise(() => Promise.all([client.callTool("t", { n: 1 }), client.callTool("t", { n: 2 })]))
      assert.deepStrictEqual(a, { ok: true, output: { echoed: { n: 1 } } })
      assert.deepStrictEqual(b, { ok: true, output: { echoed: { n: 2 } } })
      client.send({ _tag: "done" })
      yield* eventually(() => fromRunner.some((l) => l.includes("\"done\"")) || undefined, { label: "the runner's done line" })
      const errors = fromRunner.map((l) => decodeRunnerLine(l)).filter((m) => Either.isRight(m) && m.right._tag === "error")
      assert.strictEqual(errors.length, 1)
      yield* Effect.promise(() => client.close())
      assert.isTrue(Schema.is(RunnerMessage)({ _tag: "done" }))
    }))
})
