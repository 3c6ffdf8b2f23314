import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Either, type Layer, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { HostConfig } from "../../config/HostConfig.js"
import type { MessageStore } from "../../db/MessageStore.js"
import { parseConversationId } from "../../domain/ids.js"
import { MAX_TEXT_CHARS, WrittenText } from "../../domain/message.js"
import { wakeHost } from "../../host/ControlSocket.js"
import { Ingest } from "../../pipeline/Ingest.js"

const conversation = Options.text("conversation").pipe(
  Options.withAlias("c"),
  Options.withDescription("Conversation id, `<connection>:<place>` (e.g. cli:default); created on first use when a route matches.")
)
const text = Args.text({ name: "text" }).pipe(Args.withDescription("The message."))

const refuse = (line: string) => Console.error(line).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))

/**
 * Ingests through the same durable path as every channel, into the database of a running or
 * stopped host; a running host is woken through its control socket.
 */
export const send = <E>(client: Layer.Layer<Ingest | MessageStore | HostConfig, E>) =>
  Command.make("send", { conversation, text }, ({ conversation, text }) =>
    Effect.gen(function* () {
      const { dataDir } = yield* HostConfig
      // The checks of every way in (the HTTP API's): one line naming what is wrong, nothing stored.
      const target = parseConversationId(conversation, "cli")
      if (Either.isLeft(target)) return yield* refuse(`conversation: ${target.left}`)
      if (Either.isLeft(Schema.decodeEither(WrittenText)(text))) return yield* refuse(`text: must be 1-${MAX_TEXT_CHARS.toLocaleString("en-US")} characters (found ${text.length.toLocaleString("en-US")})`)
      const { connection, place } = target.right
      const ingest = yield* Ingest
      const result = yield* ingest.ingest({ connection, place, providerEventId: `cli-${randomUUID()}`, sender: "cli", text })
      const woken = yield* wakeHost(dataDir, result.conversationId)
      yield* Console.log(`message ${result.messageId} stored in ${result.conversationId}; ${woken ? "the running host was woken" : "no host is running: it is answered at the next start"}`)
    }).pipe(
      Effect.catchTags({
        InvalidInput: (e) => refuse(e.message),
        NoRoute: (e) => refuse(`${e.message}; add a route in pynchy.yaml`)
      }),
      Effect.provide(client)
    )
  ).pipe(Command.withDescription("Send a message into a conversation through the durable ingest path."))
