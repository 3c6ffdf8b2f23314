// A minimal agent core. It runs inside the sandbox with no network: the model is reached only
// through ctx.gateway (the gateway's socket, with this turn's token), and files only under
// /workspace through the sandbox tools. Self-contained on purpose: only this file is mounted.

/** ctx: the core context (docs/plugins/hooks.md, "agentCore"). */
export default async function shout(ctx) {
  const asked = ctx.turn.messages.map((m) => m.text).join("\n")
  ctx.delta("thinking")
  let answer = asked
  if (ctx.gateway !== null && ctx.turn.model !== null) {
    const completion = await ctx.gateway.post("/v1/chat/completions", {
      model: ctx.turn.model,
      messages: [{ role: "system", content: ctx.system }, { role: "user", content: asked }]
    })
    answer = completion?.choices?.[0]?.message?.content ?? asked
  }
  const saved = await ctx.callTool("write_file", { path: "last-shout.txt", content: answer })
  ctx.reply(saved.ok ? answer.toUpperCase() : `${answer.toUpperCase()} (not saved: ${saved.output})`)
}
