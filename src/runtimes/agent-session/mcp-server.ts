import { Cause, Effect, Either, Exit, Option, Runtime, Schema } from "effect"
import * as crypto from "node:crypto"
import { DeliveryStore } from "../../db/DeliveryStore.js"
import { MessageStore } from "../../db/MessageStore.js"
import { TurnStore } from "../../db/TurnStore.js"
import { InvalidInput, NotFound } from "../../domain/errors.js"
import { ConversationId } from "../../domain/ids.js"
import { problemsOf } from "../../domain/problems.js"
import { Ingest } from "../../pipeline/Ingest.js"
import { VERSION } from "../../version.js"
import { AgentSessionRuntimeRegistry } from "./AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "./AgentSessions.js"

/** What the MCP tools read and write. */
export type McpServices = MessageStore | TurnStore | DeliveryStore | Ingest | AgentSessions | AgentSessionRuntimeRegistry

interface ToolResult {
  [key: string]: unknown
  content: Array<{ type: "text"; text: string }>
  isError?: boolean
}

const ok = (value: unknown): ToolResult => ({ content: [{ type: "text", text: JSON.stringify(value, null, 2) }] })
const refused = (text: string): ToolResult => ({ content: [{ type: "text", text }], isError: true })

const conversationIdOf = (raw: string) =>
  Either.mapLeft(Schema.decodeUnknownEither(ConversationId)(raw), (e) => new InvalidInput({ what: "conversationId", problems: problemsOf(e, ["conversationId"]) }))

/**
 * The SDK and zod are imported when a server is made, not when the CLI bundle loads: a static
 * import would make every command initialize them.
 */
const loadSdk = Effect.promise(() =>
  Promise.all([import("@modelcontextprotocol/sdk/server/mcp.js"), import("@modelcontextprotocol/sdk/server/stdio.js"), import("zod")])
)

/**
 * The MCP tools over the host's stores and the agent-session services. Each tool runs one Effect
 * through the runtime it was built in (the Promise-facing edge); typed failures come back as
 * `isError` results naming the problem, defects as an opaque internal error (logged).
 */
export const makeMcpServer = Effect.gen(function* () {
  const [{ McpServer }, { StdioServerTransport }, { z }] = yield* loadSdk
  const conversationId = z.string().min(1).max(512).describe("A conversation id, `<connection>:<place>` (see list_conversations).")
  const timeoutMs = z.number().int().positive().max(600_000).optional().describe("This call's deadline in ms (default 60000).")
  const runtime = yield* Effect.runtime<McpServices>()
  const run = <A, E extends { readonly _tag: string; readonly message: string }>(effect: Effect.Effect<A, E, McpServices>) =>
    Runtime.runPromiseExit(runtime)(effect).then((exit): ToolResult => {
      if (Exit.isSuccess(exit)) return ok(exit.value)
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure)) return refused(`${failure.value._tag}: ${failure.value.message}`)
      Runtime.runSync(runtime)(Effect.logError("mcp tool failed", exit.cause))
      return refused("internal error (see the server log)")
    })
  const withConversation = <A, E extends { readonly _tag: string; readonly message: string }>(
    raw: string,
    f: (id: ConversationId) => Effect.Effect<A, E, McpServices>
  ) => run(Effect.flatMap(conversationIdOf(raw), f))

  const server = new McpServer({ name: "pynchy", version: VERSION })

  server.registerTool("list_runtimes", {
    description: "Agent-session runtimes this server can reach, with their capabilities (inspect, continue, detach)."
  }, () => run(Effect.flatMap(AgentSessionRuntimeRegistry, (r) => r.runtimes)))

  server.registerTool("list_conversations", {
    description: "Conversations in the host database, each with its current agent-session attachment (or null)."
  }, () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const sessions = yield* AgentSessions
      const conversations = yield* messages.conversations
      return yield* Effect.forEach(conversations, (c) =>
        Effect.map(sessions.current(c.id), (a) => ({ ...c, attachment: Option.getOrNull(a) }))
      )
    })))

  server.registerTool("send_message", {
    description: "Send a message into an existing conversation, as if it arrived on the conversation's own connection and place.",
    inputSchema: {
      conversationId,
      text: z.string().min(1).max(1_000_000),
      sender: z.string().min(1).max(255).optional().describe("Who the message is from (default: mcp).")
    }
  }, (args) =>
    withConversation(args.conversationId, (id) =>
      Effect.gen(function* () {
        const messages = yield* MessageStore
        const ingest = yield* Ingest
        const conversation = yield* Effect.flatMap(messages.conversation(id), Option.match({
          onNone: () => Effect.fail(new NotFound({ entity: "conversation", id })),
          onSome: Effect.succeed
        }))
        return yield* ingest.ingest({
          connection: conversation.connection,
          place: conversation.place,
          providerEventId: `mcp:${crypto.randomUUID()}`,
          sender: args.sender ?? "mcp",
          text: args.text,
          metadata: { via: "mcp" }
        })
      })))

  server.registerTool("read_recent", {
    description: "The recent messages (both directions), turns and replies (deliveries) of a conversation, oldest first.",
    inputSchema: { conversationId, limit: z.number().int().min(1).max(200).optional().describe("How many of each (default 20).") }
  }, (args) =>
    withConversation(args.conversationId, (id) =>
      Effect.gen(function* () {
        const limit = args.limit ?? 20
        const messages = yield* (yield* MessageStore).recent(id, limit)
        const turns = yield* (yield* TurnStore).recent(id, limit)
        const replies = yield* (yield* DeliveryStore).byConversation(id, limit)
        return { messages, turns: [...turns].reverse(), replies }
      })))

  server.registerTool("attach_session", {
    description: "Attach a conversation to an agent session: the runtime id and the session's id in that runtime (`sessionRef` is an alias of `sessionId`). " +
      "Replaces a current attachment, keeping it as superseded.",
    inputSchema: {
      conversationId,
      runtimeId: z.string().min(1).max(128),
      sessionId: z.string().min(1).max(1024).optional().describe("The session's id in its runtime's own namespace."),
      sessionRef: z.string().min(1).max(1024).optional().describe("Alias of sessionId (earlier name)."),
      providerSessionId: z.string().min(1).max(1024).optional().describe("The provider's own session or thread id."),
      host: z.string().min(1).max(255).optional().describe("The machine whose runtime owns the session."),
      remoteUrl: z.string().min(1).max(2048).optional().describe("Where a human opens the session."),
      metadata: z.record(z.string(), z.string()).optional().describe("Runtime-specific extras, strings only.")
    }
  }, ({ conversationId: raw, ...target }) =>
    withConversation(raw, (id) =>
      Effect.flatMap(AgentSessions, (s) => s.attach(id, target)).pipe(
        Effect.map((a) => ({ attachment: a.attachment, superseded: Option.getOrNull(a.superseded) }))
      )))

  server.registerTool("inspect_session", {
    description: "Ask the runtime for the state of the conversation's attached session. The answer is normalized: state is one of " +
      "starting, running, idle, needs_input, needs_permission, completed, stale, dead, failed, unavailable, unknown; " +
      "finalResponse only when the turn completed; error.code says why a session could not be asked (session_not_found, unknown_runtime, inspect_timeout ...).",
    inputSchema: { conversationId, timeoutMs }
  }, (args) => withConversation(args.conversationId, (id) => Effect.flatMap(AgentSessions, (s) => s.inspect(id, { timeoutMs: args.timeoutMs }))))

  server.registerTool("continue_session", {
    description: "Hand the conversation's attached session a follow-up turn: the runtime's continue callback receives { prompt }. Answers the normalized status.",
    inputSchema: { conversationId, prompt: z.string().min(1).max(1_000_000), timeoutMs }
  }, (args) =>
    withConversation(args.conversationId, (id) =>
      Effect.flatMap(AgentSessions, (s) => s.continueTurn(id, { prompt: args.prompt }, { timeoutMs: args.timeoutMs }))))

  server.registerTool("detach_session", {
    description: "Detach the conversation from its session (the record is kept as detached). The session is left running unless stopRuntime is true, " +
      "which calls the runtime's detach callback with { reason }.",
    inputSchema: {
      conversationId,
      reason: z.string().min(1).max(1000).optional(),
      stopRuntime: z.boolean().optional().describe("Also stop the session in its runtime (default false)."),
      timeoutMs
    }
  }, (args) =>
    withConversation(args.conversationId, (id) =>
      Effect.flatMap(AgentSessions, (s) => s.detach(id, { reason: args.reason, stopRuntime: args.stopRuntime }, { timeoutMs: args.timeoutMs }))))

  server.registerTool("attachment_history", {
    description: "Every attachment record of a conversation, oldest first: current, superseded and detached.",
    inputSchema: { conversationId }
  }, (args) => withConversation(args.conversationId, (id) => Effect.flatMap(AgentSessions, (s) => s.history(id))))

  return { server, transport: () => new StdioServerTransport() }
})

/** Serves the tools on stdin/stdout until the client goes away (or the fiber is interrupted). */
export const serveStdio = Effect.gen(function* () {
  const { server, transport } = yield* makeMcpServer
  yield* Effect.acquireRelease(
    Effect.promise(() => server.connect(transport())),
    () => Effect.promise(() => server.close())
  )
  yield* Effect.logInfo("mcp server ready on stdio")
  yield* Effect.async<void>((resume) => {
    const done = () => resume(Effect.void)
    server.server.onclose = done
    process.stdin.once("end", done)
    return Effect.sync(() => process.stdin.off("end", done))
  })
}).pipe(Effect.scoped)
