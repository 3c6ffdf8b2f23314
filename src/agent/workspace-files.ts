/**
 * AGENTS.md and MEMORY.md from the workspace, for the system prompt. The agent writes them, so
 * they are read like any untrusted file: only a regular file (no link, FIFO or device: a FIFO
 * opened for reading would hang the turn), opened O_NOFOLLOW|O_NONBLOCK, at most 20 KB.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { decodeCut } from "./tools/files.js"

export const WORKSPACE_FILES = ["AGENTS.md", "MEMORY.md"] as const
export const WORKSPACE_FILE_CAP = 20 * 1024

export interface WorkspaceFile {
  readonly name: string
  readonly text: string
  /** Bytes left out past the cap (0 when whole). */
  readonly cutBytes: number
}

const readCapped = (file: string, cap: number): { text: string; cutBytes: number } | undefined => {
  const st = fs.lstatSync(file, { throwIfNoEntry: false })
  if (st === undefined || !st.isFile()) return undefined
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
  try {
    const opened = fs.fstatSync(fd)
    if (!opened.isFile()) return undefined
    const buf = Buffer.alloc(Math.min(opened.size, cap))
    let got = 0
    while (got < buf.length) {
      const n = fs.readSync(fd, buf, got, buf.length - got, got)
      if (n === 0) break
      got += n
    }
    return { text: decodeCut(buf.subarray(0, got)), cutBytes: Math.max(0, opened.size - got) }
  } finally {
    fs.closeSync(fd)
  }
}

/** The workspace files that are there and readable, in a fixed order. */
export const readWorkspaceFiles = (workspaceDir: string, cap = WORKSPACE_FILE_CAP): ReadonlyArray<WorkspaceFile> =>
  WORKSPACE_FILES.flatMap((name) => {
    try {
      const read = readCapped(path.join(workspaceDir, name), cap)
      return read === undefined || read.text.trim() === "" ? [] : [{ name, ...read }]
    } catch {
      return []
    }
  })

/** A workspace file as a system prompt section, with a note when it was cut. */
export const workspaceFileSection = (f: WorkspaceFile): string => {
  const note = f.cutBytes > 0
    ? `\n\n[${f.name} is cut here: ${f.cutBytes} more bytes are past the ${WORKSPACE_FILE_CAP / 1024} KB that are read into this prompt; keep it shorter]`
    : ""
  return `# ${f.name} (workspace file)\n${f.text.trim()}${note}`
}
