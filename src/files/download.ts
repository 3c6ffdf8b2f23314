/** Reading a file a user sent from a platform's server, bounded (Slack, Telegram, Discord). */

/**
 * Reads a fetch response's body up to `maxBytes`. Past that (by its declared length, or by what
 * arrived) it stops reading, cancels the rest, and answers undefined: a server that lies about
 * the size, or sends without one, still costs at most `maxBytes` of memory.
 */
export const readCapped = async (res: Response, maxBytes: number): Promise<Uint8Array | undefined> => {
  const declared = Number(res.headers.get("content-length") ?? Number.NaN)
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined)
    return undefined
  }
  if (res.body === null) return new Uint8Array()
  const chunks: Array<Uint8Array> = []
  let size = 0
  const reader = res.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  return new Uint8Array(Buffer.concat(chunks))
}
