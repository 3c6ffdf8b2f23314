/**
 * OpenAI chat completions through the gateway, streamed: text deltas go to the host as they
 * arrive, tool-call deltas are assembled into whole calls, and the core loops on tool calls
 * (sandbox tools run in the runner, host actions over IPC) for at most `maxToolRounds` rounds.
 */
import { conversation } from "../context.js"
import type { SseEvent } from "../gateway-client.js"
import { CoreFailed, type CoreContext, type CoreRun, NO_PROVIDER_NOTICE, outcomeText, streamFailure } from "./types.js"

interface ToolCallOut {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

interface ChatAnswer {
  readonly choices?: ReadonlyArray<{ readonly message?: { readonly content?: string | null; readonly tool_calls?: ReadonlyArray<ToolCallOut> } }>
}

interface ChunkDelta {
  readonly content?: string | null
  readonly tool_calls?: ReadonlyArray<{ readonly index?: number; readonly id?: string; readonly function?: { readonly name?: string; readonly arguments?: string } }>
}

const parseArgs = (text: string): unknown => {
  if (text.trim() === "") return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** One streamed answer: its text (sent on as deltas) and its tool calls, whole. */
const streamRound = async (ctx: CoreContext, body: Record<string, unknown>) => {
  let text = ""
  let sawChunk = false
  const calls: Array<{ id: string; name: string; arguments: string }> = []
  await ctx.gateway!.stream("/v1/chat/completions", body, (e: SseEvent) => {
    if (e.data === "[DONE]") return
    if (e.event === "json") {
      // An upstream that did not stream: the whole answer at once.
      const message = (JSON.parse(e.data) as ChatAnswer).choices?.[0]?.message
      if (message === undefined) throw new CoreFailed("llm_bad_answer", "the answer has no message", true)
      sawChunk = true
      text = message.content ?? ""
      if (text !== "") ctx.delta(text)
      for (const c of message.tool_calls ?? []) calls.push({ id: c.id, name: c.function.name, arguments: c.function.arguments })
      return
    }
    const chunk = JSON.parse(e.data) as { error?: unknown; choices?: ReadonlyArray<{ delta?: ChunkDelta }> }
    if (chunk.error !== undefined) throw streamFailure(chunk.error)
    sawChunk = true
    const delta = chunk.choices?.[0]?.delta
    if (delta === undefined) return
    if (typeof delta.content === "string" && delta.content !== "") {
      text += delta.content
      ctx.delta(delta.content)
    }
    for (const part of delta.tool_calls ?? []) {
      const i = part.index ?? calls.length
      const call = (calls[i] ??= { id: "", name: "", arguments: "" })
      if (part.id !== undefined) call.id = part.id
      if (part.function?.name !== undefined) call.name += part.function.name
      if (part.function?.arguments !== undefined) call.arguments += part.function.arguments
    }
  })
  if (!sawChunk) throw new CoreFailed("llm_bad_answer", "the stream held no answer", true)
  const whole: Array<ToolCallOut> = calls.filter((c) => c !== undefined && c.name !== "").map((c, i) => ({
    id: c.id === "" ? `call_${i}` : c.id,
    type: "function",
    function: { name: c.name, arguments: c.arguments }
  }))
  return { text, calls: whole }
}

export const openai: CoreRun = async (ctx) => {
  if (ctx.gateway === null || ctx.turn.model === null) return ctx.reply(NO_PROVIDER_NOTICE)
  const messages: Array<Record<string, unknown>> = [
    { role: "system", content: ctx.system },
    ...conversation(ctx.turn).map((t) => ({ role: t.role, content: t.text }))
  ]
  const tools = ctx.tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } }))
  for (let round = 0; ; round++) {
    const body: Record<string, unknown> = { model: ctx.turn.model, messages, stream: true, stream_options: { include_usage: true } }
    if (tools.length > 0 && round < ctx.turn.maxToolRounds) body.tools = tools
    const answer = await streamRound(ctx, body)
    if (answer.calls.length === 0 || round >= ctx.turn.maxToolRounds) return ctx.reply(answer.text)
    messages.push({ role: "assistant", content: answer.text === "" ? null : answer.text, tool_calls: answer.calls })
    for (const call of answer.calls) {
      const outcome = await ctx.callTool(call.function.name, parseArgs(call.function.arguments))
      const text = outcomeText(outcome)
      messages.push({ role: "tool", tool_call_id: call.id, content: outcome.ok ? text : `error: ${text}` })
    }
  }
}
