/**
 * Reading a request body under a size limit without resetting the connection. The platform's
 * reader destroys the socket at the limit, so the client sees a reset instead of the 413. Here a
 * body over the limit is read to its end and dropped (up to DRAIN_LIMIT more), so the client has
 * finished sending when the 413 arrives; only a body past that too is cut off.
 */
import { Data, Effect } from "effect"
import type * as http from "node:http"

export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly limit: number; readonly drained: boolean }> {}
export class BodyUnreadable extends Data.TaggedError("BodyUnreadable")<{}> {}

/** How much of an oversized body is read and dropped so that the 413 reaches the client. */
const DRAIN_LIMIT = 16 * 1024 * 1024

export const readBody = (req: http.IncomingMessage, limit: number): Effect.Effect<string, BodyTooLarge | BodyUnreadable> =>
  Effect.async<string, BodyTooLarge | BodyUnreadable>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    let done = false
    const finish = (effect: Effect.Effect<string, BodyTooLarge | BodyUnreadable>) => {
      if (done) return
      done = true
      req.off("data", onData)
      resume(effect)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) chunks.push(chunk)
      else if (size > limit + DRAIN_LIMIT) finish(Effect.fail(new BodyTooLarge({ limit, drained: false })))
      else chunks.length = 0
    }
    const declared = Number(req.headers["content-length"])
    if (Number.isFinite(declared) && declared > limit + DRAIN_LIMIT) return finish(Effect.fail(new BodyTooLarge({ limit, drained: false })))
    req.on("data", onData)
    req.once("end", () => finish(size > limit ? Effect.fail(new BodyTooLarge({ limit, drained: true })) : Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
    req.once("error", () => finish(Effect.fail(new BodyUnreadable())))
    req.once("aborted", () => finish(Effect.fail(new BodyUnreadable())))
  })
