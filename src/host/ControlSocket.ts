import { Effect, Either, Layer, Runtime, Schema } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { HostConfig } from "../config/HostConfig.js"
import { ConversationId } from "../domain/ids.js"
import { GatewayKeys } from "../gateway/key-sync.js"
import { TurnSignal } from "../pipeline/TurnSignal.js"

/** `<dataDir>/control.sock`: how another process (`pynchy send`, `pynchy keys`) wakes a running host. */
export const controlSocketPath = (dataDir: string) => path.join(dataDir, "control.sock")

const Request = Schema.parseJson(Schema.Union(
  Schema.Struct({ op: Schema.Literal("wake"), conversationId: ConversationId }),
  /** The gateway keys changed: read them again. */
  Schema.Struct({ op: Schema.Literal("keys") })
))
const decodeRequest = Schema.decodeUnknownEither(Request)

/**
 * Serves the control socket for the host's lifetime. One JSON line per request; a malformed
 * line gets an error answer and nothing else happens.
 */
export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { dataDir } = yield* HostConfig
    const signals = yield* TurnSignal
    const keys = yield* GatewayKeys
    const runtime = yield* Effect.runtime<never>()
    const file = controlSocketPath(dataDir)
    const server = net.createServer((socket) => {
      let buffer = ""
      socket.setEncoding("utf8")
      socket.on("error", () => socket.destroy())
      socket.on("data", (chunk: string) => {
        buffer += chunk
        if (buffer.length > 64 * 1024) return socket.destroy()
        let nl: number
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl)
          buffer = buffer.slice(nl + 1)
          const request = decodeRequest(line)
          if (Either.isLeft(request)) {
            socket.write(JSON.stringify({ ok: false, error: "expected {\"op\":\"wake\",\"conversationId\":\"...\"} or {\"op\":\"keys\"}" }) + "\n")
            continue
          }
          const req = request.right
          if (req.op === "keys") {
            // Answered once the gateway holds the new keys: a revoked key is refused from then on.
            Runtime.runFork(runtime)(keys.reload.pipe(Effect.ensuring(Effect.sync(() => socket.write(JSON.stringify({ ok: true }) + "\n")))))
            continue
          }
          Runtime.runFork(runtime)(signals.signal(req.conversationId))
          socket.write(JSON.stringify({ ok: true }) + "\n")
        }
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void, Error>((resume) => {
        // A socket file left by a killed host is stale: nothing listens on it any more.
        fs.rmSync(file, { force: true })
        server.once("error", (e) => resume(Effect.fail(e)))
        server.listen(file, () => resume(Effect.void))
      }).pipe(Effect.orDie),
      () => Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
    )
  })
)

/** Asks a running host to look at a conversation; false when no host answers. */
export const wakeHost = (dataDir: string, conversationId: string): Effect.Effect<boolean> => ask(dataDir, { op: "wake", conversationId })

/** Asks a running host to read the gateway keys again; false when no host answers. */
export const reloadHostKeys = (dataDir: string): Effect.Effect<boolean> => ask(dataDir, { op: "keys" })

const ask = (dataDir: string, request: { readonly op: "wake"; readonly conversationId: string } | { readonly op: "keys" }): Effect.Effect<boolean> =>
  Effect.async<boolean>((resume) => {
    const socket = net.createConnection(controlSocketPath(dataDir))
    let answered = false
    const done = (ok: boolean) => {
      if (answered) return
      answered = true
      clearTimeout(deadline)
      socket.destroy()
      resume(Effect.succeed(ok))
    }
    // A plain timer, not the socket's idle timeout: that one is cleared when the socket closes,
    // and a host killed after accepting closes it without an answer or an error.
    const deadline = setTimeout(() => done(false), 2_000)
    socket.once("error", () => done(false))
    socket.once("close", () => done(false))
    socket.once("data", (d) => done(String(d).includes("\"ok\":true")))
    socket.once("connect", () => socket.write(JSON.stringify(request) + "\n"))
  })

/** The turn signal of a process that is not the host: it wakes the host, if one runs. */
export const remoteSignalLayer = Layer.effect(
  TurnSignal,
  Effect.map(HostConfig, ({ dataDir }) => TurnSignal.of({ signal: (c) => Effect.asVoid(wakeHost(dataDir, c)) }))
)
