/**
 * What a request may spend, reserved at admission (admission.ts) and settled at its end
 * (accounting.ts). Output is bounded by the request's own cap; input is estimated from the body:
 * its text by size, each image at a fixed cost, and tool use at the prompt a provider wraps
 * around the tools. The body's size alone let a 400-byte request that points at two images
 * reserve about 100 tokens and be billed 3,000.
 *
 * The walk is targeted (the message lists of the three APIs, one level of tool results), never a
 * generic recursion: a deeply nested body cannot blow the stack of the data path.
 */
import type { GatewayBudgets } from "../config/gateway.js"

/** Output cap fields, across the three APIs; the largest one set is reserved. */
const capFields = ["max_tokens", "max_completion_tokens", "max_output_tokens"] as const
const MAX_RESERVATION = 2 ** 48

/** An OpenAI image sent with `detail: "low"`: a flat 85 tokens, whatever its size. */
export const LOW_DETAIL_IMAGE_TOKENS = 85

/**
 * The prompt a provider adds when a request declares tools: Anthropic documents 159 to 530 tokens
 * by model and `tool_choice` (346 for Claude 4 with `auto`); the largest is reserved.
 */
export const TOOL_PROMPT_TOKENS = 530

/**
 * Each declared tool's framing beyond its JSON (OpenAI's counting recipe: 7 to start a function,
 * 12 to end it). The schema's JSON itself is counted with the body's bytes: the built-in tools'
 * schemas measure 4.5 bytes a token (o200k), so one token per 4 bytes covers them.
 */
export const TOOL_FRAMING_TOKENS = 20

export interface InputParts {
  /** Images found, by what they are reserved at. */
  readonly images: number
  readonly lowDetailImages: number
  /** Bytes of inline image data (base64 sources, `data:` URLs): counted as images, not as text. */
  readonly imageDataBytes: number
  readonly tools: number
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v)

const dataLength = (url: unknown): number => typeof url === "string" && url.startsWith("data:") ? url.length : 0

/** The images and tools of a request body (chat completions, Responses, Anthropic Messages). */
export const inputParts = (body: Record<string, unknown>): InputParts => {
  let images = 0
  let lowDetailImages = 0
  let imageDataBytes = 0

  const image = (detail: unknown, data: number) => {
    if (detail === "low") lowDetailImages++
    else images++
    imageDataBytes += data
  }

  /** One content part: an image in any of the three dialects, else nothing. */
  const part = (p: unknown) => {
    if (!isObject(p)) return
    switch (p.type) {
      case "image_url": {
        // Chat completions: `image_url` is `{ url, detail }` (or, from some clients, the URL itself).
        const v = p.image_url
        return isObject(v) ? image(v.detail, dataLength(v.url)) : image(undefined, dataLength(v))
      }
      case "input_image":
        // Responses: `{ image_url, detail }` or a `file_id`.
        return image(p.detail, dataLength(p.image_url))
      case "image": {
        // Anthropic: `source` is base64 data, a URL or a file.
        const source = p.source
        return image(undefined, isObject(source) && typeof source.data === "string" ? source.data.length : 0)
      }
    }
  }

  /** A part and, for the parts that carry their own content (tool results), what is inside it. */
  const parts = (list: unknown) => {
    if (!Array.isArray(list)) return
    for (const p of list) {
      part(p)
      if (isObject(p)) {
        if (Array.isArray(p.content)) for (const inner of p.content) part(inner)
        if (Array.isArray(p.output)) for (const inner of p.output) part(inner)
      }
    }
  }

  // Chat and Anthropic: messages[].content[]; Responses: input[] of items and messages.
  if (Array.isArray(body.messages)) for (const m of body.messages) if (isObject(m)) parts(m.content)
  if (Array.isArray(body.input)) parts(body.input)

  const tools = Array.isArray(body.tools) ? body.tools.length : 0
  return { images, lowDetailImages, imageDataBytes, tools }
}

/**
 * The input a body may be billed: its bytes less inline image data at `inputBytesPerToken`, each
 * image at `imageTokens` (85 for an OpenAI low-detail one), and, with tools, the tool prompt and
 * each tool's framing.
 */
export const inputEstimate = (body: Record<string, unknown>, bytes: number, config: GatewayBudgets): number => {
  const p = inputParts(body)
  const text = Math.ceil(Math.max(0, bytes - p.imageDataBytes) / config.inputBytesPerToken)
  const images = p.images * config.imageTokens + p.lowDetailImages * LOW_DETAIL_IMAGE_TOKENS
  const tools = p.tools > 0 ? TOOL_PROMPT_TOKENS + p.tools * TOOL_FRAMING_TOKENS : 0
  return text + images + tools
}

/**
 * What a request may spend: its output cap (the largest it sets, times `n` choices) or the
 * configured default, plus its input estimate.
 */
export const reservationOf = (body: Record<string, unknown>, bytes: number, config: GatewayBudgets): number => {
  let cap = 0
  for (const field of capFields) {
    const v = body[field]
    if (typeof v === "number" && Number.isFinite(v) && v > cap) cap = Math.ceil(v)
  }
  const n = typeof body.n === "number" && Number.isInteger(body.n) && body.n > 1 ? body.n : 1
  return Math.min(MAX_RESERVATION, (cap > 0 ? cap : config.defaultMaxTokens) * n + inputEstimate(body, bytes, config))
}
