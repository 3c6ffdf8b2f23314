import * as fs from "node:fs"
import type { Channel, OutboundDelivery } from "../contracts/channel.js"

export interface RecordingOptions {
  readonly name: string
  /** JSONL file: one line per delivery the "platform" accepted. */
  readonly file: string
  /** Behave like a platform with transaction ids: a key seen before is accepted and not recorded again. */
  readonly idempotent: boolean
  /** Delay inside send before and after the platform accepts (widens crash windows in tests). */
  readonly delayMs?: number
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * A channel whose "platform" is a file, for tests and crash drills. The write is synchronous and
 * appended, so what the file holds is exactly what the platform accepted, even across kill -9.
 * Several hosts may share the file (the crash drill's cluster): an idempotent one reads what the
 * others appended before it decides a key is new, as a platform with transaction ids would.
 */
export const recordingChannel = (options: RecordingOptions): Channel => {
  const seen = new Set<string>()
  let offset = 0
  /** Keys of the complete lines appended since the last read; a line torn by a kill mid-write was never accepted. */
  const catchUp = () => {
    if (!fs.existsSync(options.file)) return
    const fd = fs.openSync(options.file, "r")
    try {
      const bytes = Buffer.alloc(Math.max(0, fs.fstatSync(fd).size - offset))
      const read = fs.readSync(fd, bytes, 0, bytes.length, offset)
      const end = bytes.subarray(0, read).lastIndexOf(0x0a) + 1
      offset += end
      for (const line of bytes.subarray(0, end).toString("utf8").split("\n")) {
        if (line.trim() === "") continue
        try {
          seen.add((JSON.parse(line) as { key: string }).key)
        } catch {
          // A line torn by a kill mid-write was never accepted.
        }
      }
    } finally {
      fs.closeSync(fd)
    }
  }
  return {
    name: options.name,
    idempotentResends: options.idempotent,
    async send(d: OutboundDelivery) {
      if (options.delayMs) await sleep(options.delayMs)
      if (options.idempotent) catchUp()
      if (options.idempotent && seen.has(d.idempotencyKey)) return
      fs.appendFileSync(options.file, JSON.stringify({ key: d.idempotencyKey, conversation: d.conversationId, kind: d.kind, text: d.text, attempt: d.previousAttempts + 1 }) + "\n")
      if (options.delayMs) await sleep(options.delayMs)
    }
  }
}
