/** Anthropic messages through the gateway, with the host actions as tools, looping on tool_use. */
import { CoreFailed, type CoreRun, NO_PROVIDER_NOTICE } from "./types.js"

type Block =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }
interface MessagesAnswer {
  readonly content?: ReadonlyArray<Block>
  readonly stop_reason?: string
}

export const anthropic: CoreRun = async (ctx) => {
  if (ctx.gateway === null || ctx.turn.model === null) return ctx.reply(NO_PROVIDER_NOTICE)
  const messages: Array<Record<string, unknown>> = [
    { role: "user", content: ctx.turn.messages.map((m) => m.text).join("\n\n") }
  ]
  const tools = ctx.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }))
  for (let round = 0; ; round++) {
    const body: Record<string, unknown> = { model: ctx.turn.model, max_tokens: 1024, system: ctx.system, messages }
    if (tools.length > 0 && round < ctx.turn.maxToolRounds) body.tools = tools
    const answer = (await ctx.gateway.post("/v1/messages", body, { "anthropic-version": "2023-06-01" })) as MessagesAnswer
    if (!Array.isArray(answer.content)) throw new CoreFailed("llm_bad_answer", "the answer has no content", true)
    const uses = answer.content.filter((b): b is Extract<Block, { type: "tool_use" }> => b.type === "tool_use")
    if (uses.length === 0 || round >= ctx.turn.maxToolRounds) {
      const text = answer.content.filter((b): b is Extract<Block, { type: "text" }> => b.type === "text").map((b) => b.text).join("")
      if (text !== "") ctx.delta(text)
      return ctx.reply(text)
    }
    messages.push({ role: "assistant", content: answer.content })
    const results = []
    for (const use of uses) {
      const outcome = await ctx.callTool(use.name, use.input)
      results.push({ type: "tool_result", tool_use_id: use.id, content: JSON.stringify(outcome.output), ...(outcome.ok ? {} : { is_error: true }) })
    }
    messages.push({ role: "user", content: results })
  }
}
