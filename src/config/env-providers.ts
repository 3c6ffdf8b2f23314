/**
 * The zero-config provider: with no `providers:` in the config, an `OPENAI_API_KEY` or
 * `ANTHROPIC_API_KEY` in the environment becomes one provider the gateway serves (the key is
 * read by the gateway through `apiKeyEnv`, never copied). `PYNCHY_MODEL` overrides the model.
 * With neither key, there is no provider and the LLM cores answer with a notice.
 */
import { Config, Effect, Option } from "effect"
import { ProviderConfig } from "./schema.js"

const present = (name: string) =>
  Config.option(Config.redacted(name)).pipe(Effect.map((o) => Option.isSome(o)), Effect.orElseSucceed(() => false))

export const DEFAULT_MODELS = { openai: "gpt-4o-mini", anthropic: "claude-3-5-haiku-latest" } as const

export const providersFromEnv: Effect.Effect<ReadonlyArray<ProviderConfig>> = Effect.gen(function* () {
  const model = yield* Config.option(Config.nonEmptyString("PYNCHY_MODEL")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
  const providers: Array<ProviderConfig> = []
  if (yield* present("OPENAI_API_KEY")) {
    providers.push(ProviderConfig.make({ name: "openai", kind: "openai", apiKeyEnv: "OPENAI_API_KEY", models: [Option.getOrElse(model, () => DEFAULT_MODELS.openai)] }))
  }
  if (yield* present("ANTHROPIC_API_KEY")) {
    providers.push(ProviderConfig.make({ name: "anthropic", kind: "anthropic", apiKeyEnv: "ANTHROPIC_API_KEY", models: [Option.getOrElse(model, () => DEFAULT_MODELS.anthropic)] }))
  }
  return providers
})
