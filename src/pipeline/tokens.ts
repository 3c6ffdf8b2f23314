/**
 * Token counts for history budgets. Where the model family is known (OpenAI's public models),
 * gpt-tokenizer counts with the family's own encoding; anything else (Claude, llama, local
 * models, aliases) gets an estimate of one token per four characters, rounded up.
 */
import { Effect } from "effect"
import { importModule } from "../system/import-module.js"

export interface TokenCounter {
  /** `o200k_base`, `cl100k_base` or `estimate`. */
  readonly name: string
  readonly count: (text: string) => number
}

export const estimate: TokenCounter = { name: "estimate", count: (text) => Math.ceil(text.length / 4) }

/** Per message in a chat request: role and framing, as OpenAI documents for its chat format. */
export const MESSAGE_OVERHEAD = 4

const O200K = /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o)/i
const CL100K = /^(gpt-4|gpt-3\.5)/i

/** The encoding a model name implies, or null when its family is not known. */
export const encodingFor = (model: string | null): "o200k_base" | "cl100k_base" | null => {
  const name = model?.split("/").at(-1) ?? ""
  return O200K.test(name) ? "o200k_base" : CL100K.test(name) ? "cl100k_base" : null
}

const loaded = new Map<string, Promise<TokenCounter>>()
/** Counters whose encoding has loaded (or failed to): handed out without waiting on a promise. */
const ready = new Map<string, TokenCounter>()

/** The counter for a model; an encoding is loaded once per process (about a second), on first use. */
export const counterFor = (model: string | null): Effect.Effect<TokenCounter> => {
  const encoding = encodingFor(model)
  if (encoding === null) return Effect.succeed(estimate)
  const known = ready.get(encoding)
  if (known !== undefined) return Effect.succeed(known)
  let p = loaded.get(encoding)
  if (p === undefined) {
    p = importModule<typeof import("gpt-tokenizer/encoding/o200k_base")>(`gpt-tokenizer/encoding/${encoding}`).then(
      (m): TokenCounter => ({ name: encoding, count: (text) => m.countTokens(text) }),
      // A tokenizer that cannot load is no reason to fail a turn: the estimate stands in.
      () => estimate
    )
    loaded.set(encoding, p.then((c) => (ready.set(encoding, c), c)))
  }
  const pending = loaded.get(encoding)!
  return Effect.promise(() => pending)
}
