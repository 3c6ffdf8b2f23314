import { Cause, HashMap, Layer, List, Logger, LogLevel } from "effect"

/**
 * One line per event on stderr: `12:00:00.123 INFO  message key=value`. stdout stays for the
 * command's own output (chat, JSON), so logs never mix into it.
 */
const line = Logger.make(({ logLevel, message, date, annotations, cause, spans }) => {
  const time = date.toISOString().slice(11, 23)
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  const fields: Array<string> = []
  for (const [k, v] of HashMap.toEntries(annotations)) fields.push(`${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
  for (const span of List.toArray(spans)) fields.push(`${span.label}=${date.getTime() - span.startTime}ms`)
  const tail = Cause.isEmpty(cause) ? "" : `\n${Cause.pretty(cause)}`
  process.stderr.write(`${time} ${logLevel.label.padEnd(5)} ${text}${fields.length ? " " + fields.join(" ") : ""}${tail}\n`)
})

const level = (name: string | undefined) =>
  LogLevel.allLevels.find((l) => l.label.toLowerCase() === (name ?? "").toLowerCase()) ?? LogLevel.Info

/** The CLI logger; PYNCHY_LOG_LEVEL picks the level (default info). */
export const layer = Layer.merge(Logger.replace(Logger.defaultLogger, line), Logger.minimumLogLevel(level(process.env.PYNCHY_LOG_LEVEL)))
