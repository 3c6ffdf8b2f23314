import { Cause, Effect, HashMap, Layer, List, Logger, LogLevel } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { escapeControls } from "../channels/terminal/escape.js"
import { STACK_FRAME } from "./failure.js"

// Codes, reasons and names that an agent or a peer chose reach log lines. No such text may start
// a line of its own, pass for another field or act on the terminal: control characters (newlines
// too) are escaped, a field value that is not one plain word is JSON-quoted, and the lines of a
// cause are indented under a bar.
const escapeText = (text: string) => escapeControls(text)
const PLAIN = /^[A-Za-z0-9_.:/@+-]*$/
const fieldValue = (v: unknown): string => {
  const text = typeof v === "string" ? v : JSON.stringify(v) ?? String(v)
  return PLAIN.test(text) ? text : escapeControls(JSON.stringify(text))
}

/**
 * One line per event on stderr: `12:00:00.123 INFO  message key=value`. stdout stays for the
 * command's own output (chat, JSON), so logs never mix into it.
 */
export const formatLine = ({ logLevel, message, date, annotations, cause, spans }: Logger.Logger.Options<unknown>, frames = false): string => {
  const time = date.toISOString().slice(11, 23)
  const text = escapeText(Array.isArray(message) ? message.map(String).join(" ") : String(message))
  const fields: Array<string> = []
  for (const [k, v] of HashMap.toEntries(annotations)) fields.push(`${escapeText(k)}=${fieldValue(v)}`)
  for (const span of List.toArray(spans)) fields.push(`${escapeText(span.label)}=${date.getTime() - span.startTime}ms`)
  // Stack frames name the bundle's lines, not anything the reader can act on: only the log file keeps them.
  const lines = Cause.isEmpty(cause) ? [] : Cause.pretty(cause).split("\n").filter((l) => frames || !STACK_FRAME.test(l))
  const tail = lines.map((l) => `\n  | ${escapeText(l)}`).join("")
  return `${time} ${logLevel.label.padEnd(5)} ${text}${fields.length ? " " + fields.join(" ") : ""}${tail}\n`
}

const stderrLogger = Logger.make((options) => {
  process.stderr.write(formatLine(options))
})

const level = (name: string | undefined) =>
  LogLevel.allLevels.find((l) => l.label.toLowerCase() === (name ?? "").toLowerCase()) ?? LogLevel.Info

/** The CLI logger; PYNCHY_LOG_LEVEL picks the level (default info). */
export const layer = Layer.merge(Logger.replace(Logger.defaultLogger, stderrLogger), Logger.minimumLogLevel(level(process.env.PYNCHY_LOG_LEVEL)))

/**
 * The logger of a chat in a terminal, where stderr is the chat's screen: every line goes to `file`
 * (appended, owner only), and warnings and worse are also shown through what `screen` returns (above
 * the prompt), or on stderr when it returns nothing (before the chat opens, after it closed).
 */
export const layerChat = (file: string, screen: () => ((line: string) => void) | undefined) =>
  Logger.replaceScoped(
    stderrLogger,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => {
          fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
          return fs.openSync(file, "a", 0o600)
        }),
        (fd) => Effect.sync(() => fs.closeSync(fd))
      ),
      (fd) =>
        Logger.make((options) => {
          fs.writeSync(fd, formatLine(options, true))
          if (LogLevel.greaterThanEqual(options.logLevel, LogLevel.Warning)) {
            const text = formatLine(options)
            const show = screen()
            if (show !== undefined) show(text)
            else process.stderr.write(text)
          }
        })
    )
  )
