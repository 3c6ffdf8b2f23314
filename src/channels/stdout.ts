import type { Channel } from "../pipeline/channel-contract.js"

/**
 * Prints replies on the host's stdout, `[conversation] text`. It serves connections that have no
 * richer channel (the `cli` connection of `pynchy send`) so their replies are seen somewhere.
 */
export const stdoutChannel = (name: string, write: (line: string) => void = (l) => process.stdout.write(l)): Channel => ({
  name,
  idempotentResends: false,
  send: async (d) => {
    write(`[${d.conversationId}] ${d.text}\n`)
  }
})
