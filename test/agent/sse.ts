/** Streamed answers for the scripted upstreams: OpenAI chat chunks and Anthropic message events, as SSE. */
import type * as http from "node:http"

const write = (res: http.ServerResponse, events: ReadonlyArray<{ readonly event?: string; readonly data: unknown }>) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const e of events) res.write(`${e.event === undefined ? "" : `event: ${e.event}\n`}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`)
  res.end()
}

export interface StreamedCall {
  readonly id: string
  readonly name: string
  readonly input: unknown
}

/** An OpenAI chat stream: the text in `pieces`, then tool calls (their arguments in two parts each), usage, [DONE]. */
export const openaiStream = (res: http.ServerResponse, pieces: ReadonlyArray<string>, calls: ReadonlyArray<StreamedCall> = []) => {
  const chunk = (delta: unknown, finish: string | null = null) => ({ id: "chatcmpl-s", object: "chat.completion.chunk", model: "tiny", choices: [{ index: 0, delta, finish_reason: finish }] })
  const events: Array<{ data: unknown }> = [{ data: chunk({ role: "assistant", content: "" }) }]
  for (const p of pieces) events.push({ data: chunk({ content: p }) })
  calls.forEach((c, index) => {
    const args = JSON.stringify(c.input)
    const half = Math.floor(args.length / 2)
    events.push({ data: chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: args.slice(0, half) } }] }) })
    events.push({ data: chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }) })
  })
  events.push({ data: chunk({}, calls.length > 0 ? "tool_calls" : "stop") })
  events.push({ data: { id: "chatcmpl-s", object: "chat.completion.chunk", model: "tiny", choices: [], usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } } })
  events.push({ data: "[DONE]" })
  write(res, events)
}

/** An Anthropic messages stream: one text block in `pieces`, then tool_use blocks (input in two input_json_delta parts). */
export const anthropicStream = (res: http.ServerResponse, pieces: ReadonlyArray<string>, uses: ReadonlyArray<StreamedCall> = []) => {
  const events: Array<{ event: string; data: unknown }> = [
    { event: "message_start", data: { type: "message_start", message: { id: "msg_s", type: "message", role: "assistant", model: "tiny", content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } } },
    { event: "ping", data: { type: "ping" } }
  ]
  let index = 0
  if (pieces.length > 0) {
    events.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: { type: "text", text: "" } } })
    for (const p of pieces) events.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: { type: "text_delta", text: p } } })
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
    index++
  }
  for (const u of uses) {
    const json = JSON.stringify(u.input)
    const half = Math.floor(json.length / 2)
    events.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: { type: "tool_use", id: u.id, name: u.name, input: {} } } })
    events.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: json.slice(0, half) } } })
    events.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: json.slice(half) } } })
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
    index++
  }
  events.push({ event: "message_delta", data: { type: "message_delta", delta: { stop_reason: uses.length > 0 ? "tool_use" : "end_turn" }, usage: { output_tokens: 7 } } })
  events.push({ event: "message_stop", data: { type: "message_stop" } })
  write(res, events)
}
