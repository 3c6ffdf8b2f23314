import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option } from "effect"
import { randomUUID } from "node:crypto"
import { HostConfig } from "../../config/HostConfig.js"
import { MessageStore } from "../../db/MessageStore.js"
import { ConversationId } from "../../domain/ids.js"
import { wakeHost } from "../../host/ControlSocket.js"
import { Ingest } from "../../pipeline/Ingest.js"

const conversation = Options.text("conversation").pipe(
  Options.withAlias("c"),
  Options.withDescription("Conversation id, `<connection>:<place>` (e.g. cli:default); created on first use when a route matches.")
)
const text = Args.text({ name: "text" }).pipe(Args.withDescription("The message."))

/**
 * Ingests through the same durable path as every channel, into the database of a running or
 * stopped host; a running host is woken through its control socket.
 */
export const send = <E>(client: Layer.Layer<Ingest | MessageStore | HostConfig, E>) =>
  Command.make("send", { conversation, text }, ({ conversation, text }) =>
    Effect.gen(function* () {
      const { dataDir } = yield* HostConfig
      const messages = yield* MessageStore
      const existing = yield* messages.conversation(ConversationId.make(conversation))
      const [connection, place] = Option.match(existing, {
        onSome: (c) => [c.connection as string, c.place],
        onNone: () => {
          const i = conversation.indexOf(":")
          return i > 0 ? [conversation.slice(0, i), conversation.slice(i + 1)] : ["cli", conversation]
        }
      })
      const ingest = yield* Ingest
      const result = yield* ingest.ingest({ connection, place, providerEventId: `cli-${randomUUID()}`, sender: "cli", text })
      const woken = yield* wakeHost(dataDir, result.conversationId)
      yield* Console.log(`message ${result.messageId} stored in ${result.conversationId}; ${woken ? "the running host was woken" : "no host is running: it is answered at the next start"}`)
    }).pipe(
      Effect.catchTags({
        InvalidInput: (e) => Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1)))),
        NoRoute: (e) => Console.error(`${e.message}; add a route in pynchy.yaml`).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))
      }),
      Effect.provide(client)
    )
  ).pipe(Command.withDescription("Send a message into a conversation through the durable ingest path."))
