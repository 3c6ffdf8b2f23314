/**
 * The terminal conversation: a prompt with history, replies printed as they arrive (without
 * losing what is being typed) and, in a terminal, as they are written (streamed text on the
 * current line, confirmed or replaced by the final reply), a visible status while the agent
 * works, and a clean Ctrl-C.
 * Without a TTY it reads lines from stdin and, at its end, waits for the answer to the last one.
 * Everything it is handed to show (replies, streamed text, notices, log lines) is printed with its
 * control characters escaped (./escape.ts): a reply cannot colour, clear or retitle the terminal.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { terminalText } from "./escape.js"

export interface ChatUiOptions {
  readonly input: NodeJS.ReadableStream & { isTTY?: boolean }
  readonly output: NodeJS.WritableStream & { isTTY?: boolean }
  /** Lines typed are kept here (one per line, newest last); none when undefined. */
  readonly historyFile?: string
  /** Hands a typed message to the host; resolves when it is stored. */
  readonly send: (text: string) => Promise<void>
  readonly title?: string
  /** Shown under the title in a terminal (agents running unisolated, a sandbox that cannot start). */
  readonly warning?: string
  /** Lines shown under the title in a terminal (where the host's log goes). */
  readonly notes?: ReadonlyArray<string>
}

export interface ChatUi {
  /**
   * Shows a reply (or a notice) from the assistant. A reply whose `key` was streamed replaces the
   * streamed text (or just ends its line when they are the same): the text is shown once.
   */
  readonly reply: (text: string, kind?: "reply" | "notice", key?: string) => void
  /** Appends streamed text of the reply that will arrive with `key` (terminals only; otherwise ignored). */
  readonly stream: (key: string, text: string) => void
  /** Shows a line of status (connection lost, ...), not a reply. */
  readonly info: (text: string) => void
  /** Prints text (a log line, another connection's reply) above the prompt, which is redrawn with what was typed. */
  readonly print: (text: string) => void
  /** Resolves when the user leaves (Ctrl-C, Ctrl-D, /exit) or, without a TTY, when input ended and was answered. */
  readonly done: Promise<void>
  readonly close: () => void
}

const HISTORY_KEEP = 500
const REPLY_PREFIX = "pynchy› "
/** Keys of streams already ended, so a late delta does not open a new line. */
const ENDED_KEEP = 100
const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

const loadHistory = (file: string | undefined): Array<string> => {
  if (file === undefined) return []
  try {
    // readline wants newest first.
    return fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").slice(-HISTORY_KEEP).reverse()
  } catch {
    return []
  }
}

const appendHistory = (file: string | undefined, line: string) => {
  if (file === undefined || line.includes("\n")) return
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.appendFileSync(file, line + "\n", { mode: 0o600 })
  } catch {
    // History is a convenience: a read-only data dir must not break the chat.
  }
}

export const startChatUi = (options: ChatUiOptions): ChatUi => {
  const tty = options.input.isTTY === true && options.output.isTTY === true
  const out = options.output
  const rl = readline.createInterface({
    input: options.input,
    output: tty ? out : undefined,
    terminal: tty,
    history: loadHistory(options.historyFile),
    historySize: HISTORY_KEEP,
    removeHistoryDuplicates: true
  } as readline.ReadLineOptions)
  rl.setPrompt("you› ")

  let resolveDone!: () => void
  const done = new Promise<void>((r) => (resolveDone = r))
  let closed = false
  let inputEnded = false
  /** Messages sent and not answered yet (a reply answers everything sent before it). */
  let waiting = 0
  let spinner: NodeJS.Timeout | undefined
  let frame = 0
  const write = (s: string) => void out.write(s)
  /** The reply being streamed on the current line (the prompt is hidden meanwhile). */
  let streaming: { key: string; text: string } | undefined
  const ended = new Set<string>()
  const endStream = () => {
    if (streaming === undefined) return
    ended.add(streaming.key)
    if (ended.size > ENDED_KEEP) ended.delete(ended.values().next().value!)
    streaming = undefined
  }
  /** Rows the streamed text takes on screen, so it can be replaced. */
  const streamedRows = (text: string) => {
    const columns = (out as { columns?: number }).columns ?? 80
    return (REPLY_PREFIX + text).split("\n").reduce((rows, line) => rows + Math.max(1, Math.ceil(line.length / columns)), 0)
  }

  /** Clears the prompt and what was typed, however many rows they wrap over; the cursor ends at its start. */
  const clearLine = () => {
    const rows = streaming === undefined && !closed ? rl.getCursorPos().rows : 0
    if (rows > 0) readline.moveCursor(out, 0, -rows)
    readline.cursorTo(out, 0)
    readline.clearScreenDown(out)
  }
  /** The prompt carries the status: a spinner while the agent works. */
  const render = () => {
    if (!tty || closed || streaming !== undefined) return
    rl.setPrompt(spinner !== undefined ? `\x1b[2m${SPINNER[frame % SPINNER.length]} working…\x1b[0m you› ` : "you› ")
    clearLine()
    rl.prompt(true)
  }
  const setWorking = (on: boolean) => {
    if (!tty) return
    if (on && spinner === undefined) {
      spinner = setInterval(() => {
        frame++
        render()
      }, 120)
    }
    if (!on && spinner !== undefined) {
      clearInterval(spinner)
      spinner = undefined
    }
    render()
  }
  /** Prints above the prompt, keeping what the user is typing; control characters in `text` are shown escaped. */
  const print = (text: string) => {
    if (closed) return
    const line = terminalText(text)
    if (!tty) return write(line + "\n")
    if (streaming !== undefined) {
      // Something else arrives mid-stream: the partial text stays as it is, on its own line.
      write("\n")
      endStream()
    }
    clearLine()
    write(line + "\n")
    render()
  }

  const finish = () => {
    if (closed) return
    closed = true
    setWorking(false)
    rl.close()
    if (tty) write("\n")
    resolveDone()
  }

  rl.on("line", (raw) => {
    const text = raw.trim()
    if (text === "/exit" || text === "/quit") return finish()
    if (text === "") {
      if (tty) rl.prompt()
      return
    }
    appendHistory(options.historyFile, raw)
    waiting++
    setWorking(true)
    options.send(text).then(
      () => undefined,
      (e: unknown) => {
        waiting = Math.max(0, waiting - 1)
        if (waiting === 0) setWorking(false)
        print(`! not sent: ${e instanceof Error ? e.message : "failed"}`)
        if (!tty && inputEnded && waiting === 0) finish()
      }
    )
  })
  // Ctrl-C: leave cleanly (the host, if embedded, shuts down in order).
  rl.on("SIGINT", finish)
  rl.on("close", () => {
    inputEnded = true
    if (tty || waiting === 0) finish()
  })

  if (tty) {
    write(`${options.title ?? "pynchy chat"} — Ctrl-C or /exit to leave\n`)
    if (options.warning !== undefined) write(`\x1b[1;33m⚠ WARNING: ${options.warning}\x1b[0m\n`)
    for (const note of options.notes ?? []) write(`\x1b[2m${note}\x1b[0m\n`)
    rl.prompt()
  }

  return {
    reply: (raw, kind = "reply", key) => {
      const text = terminalText(raw)
      waiting = 0
      if (spinner !== undefined) clearInterval(spinner)
      spinner = undefined
      if (tty && !closed && streaming !== undefined && key === streaming.key) {
        if (text === streaming.text) write("\n")
        else {
          // Replace what was streamed by the final text (what the model wrote may differ from it).
          readline.moveCursor(out, 0, 1 - streamedRows(streaming.text))
          readline.cursorTo(out, 0)
          readline.clearScreenDown(out)
          write(REPLY_PREFIX + text + "\n")
        }
        endStream()
        render()
      } else {
        print(`${kind === "notice" ? "notice›" : REPLY_PREFIX.trimEnd()} ${text}`)
        // A delta of this reply that comes after it (a lost race) must not open a stream.
        if (key !== undefined) {
          streaming = { key, text }
          endStream()
        }
      }
      if (!tty && inputEnded) finish()
    },
    stream: (key, raw) => {
      const text = terminalText(raw)
      if (!tty || closed || text === "" || ended.has(key)) return
      if (streaming?.key !== key) {
        if (streaming !== undefined) {
          write("\n")
          endStream()
        }
        if (spinner !== undefined) clearInterval(spinner)
        spinner = undefined
        clearLine()
        write(REPLY_PREFIX)
        streaming = { key, text: "" }
      }
      streaming.text += text
      write(text)
    },
    info: (text) => print(`· ${text}`),
    print: (text) => print(text.replace(/\n+$/, "")),
    done,
    close: finish
  }
}
