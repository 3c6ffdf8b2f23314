/**
 * One program run as a filter: bytes in on stdin, bytes out on stdout. The speech tools
 * (espeak-ng, opusenc, opusdec) are used this way, so no text or audio touches the disk. The
 * promise is Promise-facing on purpose: the built-in synthesizer is a plugin like any other.
 */
import { spawn } from "node:child_process"

/** The most bytes a filter may write (about 45 minutes of 22 kHz mono WAV). */
export const MAX_OUTPUT_BYTES = 128 * 1024 * 1024

export class PipeFailed extends Error {
  constructor(readonly command: string, readonly missing: boolean, reason: string) {
    super(`${command}: ${reason}`)
    this.name = "PipeFailed"
  }
}

export const pipeThrough = (command: string, args: ReadonlyArray<string>, input: Uint8Array | string, signal?: AbortSignal): Promise<Uint8Array> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { stdio: ["pipe", "pipe", "pipe"], ...(signal !== undefined ? { signal } : {}) })
    const chunks: Array<Buffer> = []
    let size = 0
    let stderr = ""
    let settled = false
    const fail = (e: PipeFailed) => {
      if (settled) return
      settled = true
      child.kill("SIGKILL")
      reject(e)
    }
    child.on("error", (e: NodeJS.ErrnoException) =>
      fail(new PipeFailed(command, e.code === "ENOENT", e.code === "ENOENT" ? "not installed" : e.name === "AbortError" ? "stopped" : e.message)))
    child.stdout.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_OUTPUT_BYTES) return fail(new PipeFailed(command, false, `wrote more than ${MAX_OUTPUT_BYTES} bytes`))
      chunks.push(chunk)
    })
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 500) stderr += chunk.toString("utf8")
    })
    child.on("close", (code, sig) => {
      if (settled) return
      settled = true
      if (code === 0) return resolve(new Uint8Array(Buffer.concat(chunks)))
      reject(new PipeFailed(command, false, `exited ${code ?? sig}${stderr.trim() !== "" ? `: ${stderr.trim().split("\n")[0]!.slice(0, 200)}` : ""}`))
    })
    // A program that stops reading early (an error) closes stdin: that is its exit's story, not ours.
    child.stdin.on("error", () => {})
    child.stdin.end(input)
  })
