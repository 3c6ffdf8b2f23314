/** OpenAI chat completions through the gateway, with the host actions as function tools, looping on tool calls. */
import { CoreFailed, type CoreRun, NO_PROVIDER_NOTICE } from "./types.js"

interface ToolCallOut {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}
interface ChatAnswer {
  readonly choices?: ReadonlyArray<{ readonly message?: { readonly content?: string | null; readonly tool_calls?: ReadonlyArray<ToolCallOut> } }>
}

const parseArgs = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

export const openai: CoreRun = async (ctx) => {
  if (ctx.gateway === null || ctx.turn.model === null) return ctx.reply(NO_PROVIDER_NOTICE)
  const messages: Array<Record<string, unknown>> = [
    { role: "system", content: ctx.system },
    ...ctx.turn.messages.map((m) => ({ role: "user", content: m.text }))
  ]
  const tools = ctx.tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } }))
  for (let round = 0; ; round++) {
    const body: Record<string, unknown> = { model: ctx.turn.model, messages }
    if (tools.length > 0 && round < ctx.turn.maxToolRounds) body.tools = tools
    const answer = (await ctx.gateway.post("/v1/chat/completions", body)) as ChatAnswer
    const message = answer.choices?.[0]?.message
    if (message === undefined) throw new CoreFailed("llm_bad_answer", "the answer has no message", true)
    const calls = message.tool_calls ?? []
    if (calls.length === 0 || round >= ctx.turn.maxToolRounds) {
      const text = message.content ?? ""
      if (text !== "") ctx.delta(text)
      return ctx.reply(text)
    }
    messages.push({ role: "assistant", content: message.content ?? null, tool_calls: calls })
    for (const call of calls) {
      const outcome = await ctx.callTool(call.function.name, parseArgs(call.function.arguments))
      messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(outcome.ok ? outcome.output : { error: outcome.output }) })
    }
  }
}
