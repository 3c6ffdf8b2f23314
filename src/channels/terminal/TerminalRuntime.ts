/**
 * The terminal as a connection runtime of an embedded host (`pynchy chat`): typed lines are
 * ingested durably into conversation `terminal:<session>`, and the channel it binds for the
 * `terminal` connection prints the replies of that session in the chat, streamed as they are
 * written when the agent streams.
 */
import { randomUUID } from "node:crypto"
import type { Channel } from "../../contracts/channel.js"
import type { ConnectionRuntime } from "../../contracts/connection-runtime.js"
import type { ChatUi } from "./chat-ui.js"

export interface TerminalRuntimeOptions {
  /** The connection name (`terminal` by default routes to workspace main). */
  readonly connection?: string
  /** The place: one conversation per session name. */
  readonly session: string
  readonly sender?: string
  /** Builds the UI once the host can take messages. */
  readonly openUi: (send: (text: string) => Promise<void>) => ChatUi
  /** Called with the UI once it is open (the command waits on `ui.done`). */
  readonly onOpen: (ui: ChatUi) => void
}

export const makeTerminalRuntime = (options: TerminalRuntimeOptions): ConnectionRuntime => {
  const connection = options.connection ?? "terminal"
  let ui: ChatUi | undefined
  return {
    name: `${connection}-chat`,
    start: async (context) => {
      const send = async (text: string) => {
        await context.ingestMessage({ connection, place: options.session, providerEventId: `chat-${randomUUID()}`, sender: options.sender ?? "you", text })
      }
      const opened = options.openUi(send)
      ui = opened
      const channel: Channel = {
        name: connection,
        // Printing twice is harmless next to losing a reply.
        idempotentResends: true,
        send: async (delivery) => {
          if (delivery.place === options.session) opened.reply(delivery.text, delivery.kind, delivery.idempotencyKey)
          else opened.info(`[${delivery.place}] ${delivery.text}`)
        },
        // Streamed text of this session's reply; its delivery (above) confirms it once.
        progress: (event) => {
          if (event.type === "delta" && event.place === options.session) opened.stream(event.replyKey, event.text)
        }
      }
      context.channels.bind(channel)
      options.onOpen(opened)
    },
    close: async () => {
      ui?.close()
      ui = undefined
    },
    isReady: () => ui !== undefined
  }
}
