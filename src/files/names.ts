/** File names and types as the host handles them for files in and out (docs/channels.md "Files in and out"). */
import { createHash } from "node:crypto"

/** Longest name the host gives a file (bytes of UTF-8 are at most 4 per character: well under 255). */
const MAX_NAME = 60

/**
 * A name safe to be one path segment: no separators or control characters, no leading dot (no
 * hidden files, never `.` or `..`), at most 60 characters with the extension kept. Never empty.
 */
export const safeName = (name: string): string => {
  const cleaned = name.replace(/[\u0000-\u001f\u007f/\\:*?"<>|]+/g, "_").replace(/\s+/g, " ").trim().replace(/^[.\s_]+/, "")
  if (cleaned === "") return "file"
  if (cleaned.length <= MAX_NAME) return cleaned
  const dot = cleaned.lastIndexOf(".")
  const ext = dot > 0 && cleaned.length - dot <= 12 ? cleaned.slice(dot) : ""
  return cleaned.slice(0, MAX_NAME - ext.length) + ext
}

/** A folder name for a conversation id (any characters): readable, and distinct for distinct ids. */
export const safeFolder = (conversationId: string): string =>
  `${safeName(conversationId).slice(0, 40)}-${createHash("sha256").update(conversationId).digest("hex").slice(0, 8)}`

const BY_EXTENSION: Record<string, string> = {
  png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", svg: "image/svg+xml",
  pdf: "application/pdf", txt: "text/plain", md: "text/markdown", csv: "text/csv", html: "text/html", json: "application/json",
  mp3: "audio/mpeg", ogg: "audio/ogg", oga: "audio/ogg", wav: "audio/wav", m4a: "audio/mp4", zip: "application/zip"
}

/** The MIME type of a file name by its extension; `application/octet-stream` when unknown. */
export const mimeTypeOf = (name: string): string => {
  const dot = name.lastIndexOf(".")
  return (dot < 0 ? undefined : BY_EXTENSION[name.slice(dot + 1).toLowerCase()]) ?? "application/octet-stream"
}

/** Whether a MIME type is one of `types` (exact, or a `family/*`). Parameters (`; charset=`) are ignored. */
export const typeAllowed = (mimeType: string, types: ReadonlyArray<string>): boolean => {
  const bare = mimeType.split(";")[0]!.trim().toLowerCase()
  return types.some((t) => t.endsWith("/*") ? bare.startsWith(t.slice(0, -1)) : bare === t)
}

/** Why a file is refused, or undefined when it is taken. */
export const refusalOf = (size: number, mimeType: string, limits: { readonly maxBytes: number; readonly types: ReadonlyArray<string> }): string | undefined =>
  size > limits.maxBytes
    ? `too large (${size} bytes; the limit is ${limits.maxBytes})`
    : !typeAllowed(mimeType, limits.types)
    ? `type not allowed (${mimeType.split(";")[0]!.trim()})`
    : undefined
