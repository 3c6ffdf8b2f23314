/**
 * Reading a file without ever blocking: a FIFO or a device opened for reading could hang the
 * runner, so only regular files are read (opened O_NONBLOCK, checked with fstat), up to a size.
 */
import * as fs from "node:fs"
import { describeError } from "./output.js"

export type Read = { readonly ok: true; readonly text: string; readonly size: number; readonly cut: boolean } | { readonly ok: false; readonly error: string }

/** Reads at most `maxBytes` of a regular file (links are followed: inside the sandbox that is fine). */
export const readRegular = (abs: string, maxBytes: number): Read => {
  let fd: number
  try {
    fd = fs.openSync(abs, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  } catch (e) {
    return { ok: false, error: describeError(e) }
  }
  try {
    const st = fs.fstatSync(fd)
    if (st.isDirectory()) return { ok: false, error: "is a folder, not a file" }
    if (!st.isFile()) return { ok: false, error: "not a regular file" }
    const want = Math.min(st.size, maxBytes)
    const buf = Buffer.alloc(want)
    let got = 0
    while (got < want) {
      const n = fs.readSync(fd, buf, got, want - got, got)
      if (n === 0) break
      got += n
    }
    return { ok: true, text: decodeCut(buf.subarray(0, got)), size: st.size, cut: st.size > got }
  } catch (e) {
    return { ok: false, error: describeError(e) }
  } finally {
    fs.closeSync(fd)
  }
}

/** UTF-8 text of bytes that may end inside a character: the broken tail is dropped. */
export const decodeCut = (bytes: Buffer): string => new TextDecoder("utf-8").decode(bytes).replace(/\uFFFD+$/, "")

/** A file whose first bytes hold a NUL is treated as binary. */
export const looksBinary = (text: string): boolean => text.slice(0, 8_000).includes("\u0000")
