import type { Channel } from "../contracts/channel.js"
import { terminalText } from "./terminal/escape.js"

let redirect: ((line: string) => void) | undefined

/**
 * While a chat in this terminal owns stdout, the host's stdout lines are printed by `print` (above
 * its prompt) instead of over the prompt. Returns the undo.
 */
export const redirectStdout = (print: (line: string) => void): (() => void) => {
  redirect = print
  return () => {
    if (redirect === print) redirect = undefined
  }
}

const hostStdout = (line: string) => (redirect !== undefined ? redirect(line) : void process.stdout.write(line))

/**
 * Prints replies on the host's stdout, `[conversation] text`. It serves connections that have no
 * richer channel (the `cli` connection of `pynchy send`) so their replies are seen somewhere.
 * The reply's control characters are escaped: stdout is often a terminal.
 */
export const stdoutChannel = (name: string, write: (line: string) => void = hostStdout): Channel => ({
  name,
  idempotentResends: false,
  send: async (d) => {
    write(`[${terminalText(d.conversationId)}] ${terminalText(d.text)}\n`)
  }
})
