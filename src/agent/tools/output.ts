/** What every sandbox tool returns: text the model reads, capped, with a note saying what was cut. */

export const OUTPUT_CAP = 30_000

/** A tool's answer: `ok: false` is an error the model reads and can act on, never a crashed turn. */
export interface ToolAnswer {
  readonly ok: boolean
  readonly output: string
}

export const ok = (output: string): ToolAnswer => ({ ok: true, output })
export const refuse = (output: string): ToolAnswer => ({ ok: false, output })

/** Keeps the first `cap` characters and says how many were cut and how to see the rest. */
export const capped = (text: string, hint: string, cap = OUTPUT_CAP): string =>
  text.length <= cap ? text : `${text.slice(0, cap)}\n[output cut: ${text.length - cap} of ${text.length} characters not shown; ${hint}]`

/** An error as the model reads it: the system's code when there is one, never a stack. */
export const describeError = (e: unknown): string => {
  const err = e as NodeJS.ErrnoException
  const code = typeof err?.code === "string" ? err.code : undefined
  switch (code) {
    case "ENOENT":
      return "no such file or folder"
    case "EISDIR":
      return "is a folder, not a file"
    case "ENOTDIR":
      return "a part of the path is not a folder"
    case "EACCES":
    case "EPERM":
      return "permission denied"
    case "EROFS":
      return "read-only here"
    case "ENOSPC":
      return "no space left"
    case "ELOOP":
      return "too many symbolic links"
    default:
      return code ?? (e instanceof Error ? e.message.slice(0, 200) : "failed")
  }
}
