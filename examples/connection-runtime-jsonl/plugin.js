// An example pynchy connection runtime in plain JavaScript: no build step, no dependency on pynchy
// or Effect. Each `connections:` entry of `kind: jsonl` with an enabled route gets one runtime that
// tails an inbox JSONL file into the host and appends the host's replies to an outbox JSONL file.
// The contract: docs/connection-runtimes.md in the pynchy repository.
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"

const STREAM = "inbox"
const CHUNK_BYTES = 64 * 1024
// The host refuses texts above 1,000,000 characters; a line this long cannot be a valid message.
const MAX_LINE_BYTES = 8 * 1024 * 1024
const DEFAULT_POLL_MS = 250
const LIMIT = 255

const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve))
const nonEmpty = (v) => typeof v === "string" && v.length > 0

/** The settings of one connection, or an Error naming the field (never its value). */
const settingsOf = (name, settings, dataDir) => {
  const where = `connections.${name}`
  if (!nonEmpty(settings.file)) throw new Error(`${where}.file: must be the path of the inbox JSONL file`)
  if (settings.outbox !== undefined && !nonEmpty(settings.outbox)) throw new Error(`${where}.outbox: must be a file path when given`)
  const pollMs = settings.pollMs ?? DEFAULT_POLL_MS
  if (!Number.isInteger(pollMs) || pollMs < 10 || pollMs > 60_000) throw new Error(`${where}.pollMs: must be an integer between 10 and 60000`)
  // Relative paths resolve against the data dir, like the core `recording` channel's `file`.
  const base = path.resolve(dataDir)
  return {
    file: path.resolve(base, settings.file),
    outbox: settings.outbox === undefined ? undefined : path.resolve(base, settings.outbox),
    pollMs
  }
}

/** Why a parsed line is not a message, or undefined when it is one. */
const problemOf = (line) => {
  if (typeof line !== "object" || line === null || Array.isArray(line)) return "not a JSON object"
  if (!nonEmpty(line.id) || line.id.length > LIMIT) return `id: must be a string of 1 to ${LIMIT} characters`
  if (!nonEmpty(line.place) || line.place.length > LIMIT || line.place.trim() !== line.place) return `place: must be a trimmed string of 1 to ${LIMIT} characters`
  if (!nonEmpty(line.sender) || line.sender.length > LIMIT) return `sender: must be a string of 1 to ${LIMIT} characters`
  if (typeof line.text !== "string" || line.text.length > 1_000_000) return "text: must be a string of at most 1,000,000 characters"
  return undefined
}

/** The keys already in the outbox: the platform's memory of what it accepted. */
const acceptedKeys = (outbox) => {
  const keys = new Set()
  let content
  try {
    content = fs.readFileSync(outbox, "utf8")
  } catch (e) {
    if (e.code === "ENOENT") return keys
    throw e
  }
  // A record torn by a crash mid-append was never accepted: end it so the next append starts clean.
  if (content.length > 0 && !content.endsWith("\n")) fs.appendFileSync(outbox, "\n")
  for (const line of content.split("\n")) {
    if (line.trim() === "") continue
    try {
      keys.add(JSON.parse(line).key)
    } catch {
      // the torn record above
    }
  }
  return keys
}

const jsonlRuntime = (name, settings) => {
  // stderr, like the host's own log: the host's stdout carries `cli` replies.
  const log = (what) => console.error(`jsonl runtime ${name}: ${what}`)
  let context
  let offset = 0 // the byte after the last line handled (ingested, or skipped with a reason)
  let healthy = false
  let ingestFailing = false
  let closed = true
  let running = null
  let again = false
  let watcher
  let timer

  let lastReason
  const setHealth = (ok, reason) => {
    if (ok ? !healthy : reason !== lastReason) log(ok ? "tailing the inbox" : `not ready: ${reason}`)
    healthy = ok
    lastReason = ok ? undefined : reason
  }

  const routed = (place) => context.routes(name).some((r) => r.place === "*" || r.place === place)

  /** One complete line; resolves false when it must be retried (the loop stops there). */
  const handleLine = async (bytes, start, end) => {
    const raw = bytes.toString("utf8")
    if (raw.trim() === "") return true
    let line
    try {
      line = JSON.parse(raw)
    } catch {
      log(`skipped the line at byte ${start}: not valid JSON`)
      return true
    }
    const problem = problemOf(line)
    if (problem !== undefined) {
      log(`skipped the line at byte ${start}: ${problem}`)
      return true
    }
    if (!routed(line.place)) {
      log(`skipped the line at byte ${start}: no enabled route for its place`)
      return true
    }
    try {
      // Receipt (dedup by id), message and cursor commit in one transaction, or none of them does.
      await context.ingestMessage({
        connection: name,
        place: line.place,
        providerEventId: line.id,
        sender: line.sender,
        text: line.text,
        metadata: { inboxOffset: start },
        cursor: { stream: STREAM, position: String(end), order: end }
      })
      if (ingestFailing) {
        ingestFailing = false
        setHealth(true)
      }
      return true
    } catch (e) {
      ingestFailing = true
      setHealth(false, `ingest failed (${e instanceof Error ? e.message : String(e)}); retrying`)
      return false
    }
  }

  /** Reads from `offset` to the end of the file as it is now; a torn last line waits for its newline. */
  const pump = async () => {
    let handle
    try {
      handle = await fsp.open(settings.file, "r")
    } catch (e) {
      return setHealth(false, `cannot open the inbox (${e.code ?? "error"})`)
    }
    try {
      const { size } = await handle.stat()
      if (size < offset) return setHealth(false, `the inbox (${size} bytes) is shorter than the cursor (${offset}): truncated or replaced?`)
      // Readable: ready now, not after a long backlog (a failing ingest keeps it unready until one succeeds).
      if (!ingestFailing) setHealth(true)
      const chunk = Buffer.allocUnsafe(CHUNK_BYTES)
      let pos = offset // next byte to read
      let base = offset // file position of data[0]
      let carry = Buffer.alloc(0)
      let discarding = false
      while (!closed && pos < size) {
        const { bytesRead } = await handle.read(chunk, 0, Math.min(CHUNK_BYTES, size - pos), pos)
        if (bytesRead === 0) break
        pos += bytesRead
        const data = Buffer.concat([carry, chunk.subarray(0, bytesRead)])
        let from = 0
        for (let nl = data.indexOf(10, from); nl !== -1 && !closed; nl = data.indexOf(10, from)) {
          const start = base + from
          const end = base + nl + 1
          if (discarding) {
            log(`skipped the line at byte ${offset}: longer than ${MAX_LINE_BYTES} bytes`)
            discarding = false
          } else if (!(await handleLine(data.subarray(from, nl), start, end))) {
            return
          }
          offset = end
          from = nl + 1
          // ingestMessage resolves on the microtask queue: without a macrotask turn here, a long
          // backlog would hold off the host's timers and I/O until it is drained.
          await yieldToEventLoop()
        }
        if (closed) return
        if (data.length - from > MAX_LINE_BYTES) {
          discarding = true
          carry = Buffer.alloc(0)
          base = pos
        } else {
          carry = Buffer.from(data.subarray(from))
          base += from
        }
      }
    } catch (e) {
      setHealth(false, `cannot read the inbox (${e.code ?? "error"})`)
    } finally {
      await handle.close()
    }
  }

  /** Runs the pump, one at a time; a kick while it runs makes it go round once more. */
  const kick = () => {
    if (closed) return
    if (running !== null) {
      again = true
      return
    }
    running = (async () => {
      do {
        again = false
        await pump()
      } while (again && !closed)
    })().finally(() => {
      running = null
    })
  }

  /** The outbound side: idempotent like Matrix transaction ids (a key already accepted is not appended again). */
  const outboxChannel = (outbox) => {
    const accepted = acceptedKeys(outbox)
    return {
      name,
      idempotentResends: true,
      async send(delivery) {
        if (accepted.has(delivery.idempotencyKey)) return
        // One synchronous append: on disk it is exactly what the "platform" accepted, even across kill -9.
        fs.appendFileSync(outbox, JSON.stringify({ key: delivery.idempotencyKey, place: delivery.place, text: delivery.text }) + "\n")
        accepted.add(delivery.idempotencyKey)
      }
    }
  }

  return {
    name,

    async start(ctx) {
      context = ctx
      const cursor = await ctx.getCursor(name, STREAM)
      offset = 0
      if (cursor !== null) {
        offset = Number(cursor.position)
        if (!Number.isSafeInteger(offset) || offset < 0) throw new Error(`the stored cursor of stream '${STREAM}' is not a byte offset`)
      }
      if (settings.outbox !== undefined) ctx.channels.bind(outboxChannel(settings.outbox))
      closed = false
      healthy = false
      ingestFailing = false
      // fs.watch wakes us at once where the platform supports it; the interval covers the rest
      // (no inotify, a replaced file, a missed event, a retry after a failed ingest).
      try {
        watcher = fs.watch(settings.file, { persistent: false }, kick)
        watcher.on("error", () => undefined)
      } catch {
        watcher = undefined
      }
      timer = setInterval(kick, settings.pollMs)
      timer.unref()
      kick()
    },

    async close() {
      closed = true
      clearInterval(timer)
      watcher?.close()
      watcher = undefined
      // Let an ingest in flight finish: the host keeps ingest open until every runtime is closed.
      await running
      healthy = false
    },

    isReady: () => healthy && !closed
  }
}

export default {
  name: "connection-runtime-jsonl",
  version: "0.1.0",
  description: "Tails a JSONL inbox file into the host and appends replies to a JSONL outbox file.",

  // One runtime per `kind: jsonl` connection that has an enabled route.
  connectionRuntime: ({ config }) =>
    Object.entries(config.connections)
      .filter(([name, settings]) => settings.kind === "jsonl" && config.routes.some((r) => r.connection === name && r.enabled !== false))
      .map(([name, settings]) => jsonlRuntime(name, settingsOf(name, settings, config.dataDir)))
}
