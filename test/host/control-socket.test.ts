import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { controlSocketPath, wakeHost } from "../../src/host/ControlSocket.js"
import { tempDir } from "../support/db.js"

/** A listener on the control socket path that does what `behave` says with each connection. */
const listener = (dir: string, behave: (socket: net.Socket) => void) =>
  Effect.acquireRelease(
    Effect.async<net.Server>((resume) => {
      const server = net.createServer(behave)
      server.listen(controlSocketPath(dir), () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
  )

describe("waking a running host through its control socket", () => {
  it.live("no host: false, at once", () =>
    Effect.gen(function* () {
      assert.isFalse(yield* wakeHost(tempDir(), "cli:x"))
    }))

  it.scopedLive("a host that answers: true", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      yield* listener(dir, (s) => s.on("data", () => s.write(JSON.stringify({ ok: true }) + "\n")))
      assert.isTrue(yield* wakeHost(dir, "cli:x"))
    }))

  it.scopedLive("a host that dies after accepting (closes without an answer): false, not a hang", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      // It read the request, then died: the kernel closes the connection with a FIN, no error.
      yield* listener(dir, (s) => s.once("data", () => s.end()))
      assert.isFalse(yield* wakeHost(dir, "cli:x"))
    }))
})
