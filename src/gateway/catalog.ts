/**
 * Providers + model groups resolved into deployments: where each one is, which key it uses, which
 * public model names reach it. Keys are read here once (Effect Config for env vars, the file
 * otherwise) and stay Redacted; the catalog also hands the plain values to the redactor only.
 */
import { Config, Effect, Option, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import type { ProviderConfig } from "../config/schema.js"
import { Problem } from "../domain/errors.js"
import type { GatewayConfig } from "../config/gateway.js"
import { maskedKeys } from "./redact.js"

export type ProviderKind = ProviderConfig["kind"]

/** The client-facing APIs the gateway serves. */
export type Api = "chat" | "responses" | "messages"

export interface Deployment {
  /** `<provider>/<model>`: unique, shown in status, never secret. */
  readonly id: string
  readonly provider: string
  readonly kind: ProviderKind
  /** The model id sent upstream. */
  readonly model: string
  readonly weight: number
  readonly protocol: "http:" | "https:"
  readonly hostname: string
  readonly port: number
  /** The base URL's path without a trailing slash, e.g. `/v1`. */
  readonly basePath: string
  readonly key: Option.Option<Redacted.Redacted<string>>
  readonly rpm: number | undefined
  readonly tpm: number | undefined
  /** False when every group it serves has no other deployment and no fallback: cooling it down would only fail requests. */
  readonly coolable: boolean
}

export interface Group {
  readonly name: string
  readonly deployments: ReadonlyArray<Deployment>
  readonly fallbacks: ReadonlyArray<string>
}

export interface Catalog {
  readonly deployments: ReadonlyArray<Deployment>
  readonly groups: ReadonlyMap<string, Group>
  /** Plain key values, only for the redactor: those long enough to mask (MIN_MASKED_KEY_CHARS). */
  readonly secrets: ReadonlyArray<string>
}

/** The gateway config and the providers do not fit together; every problem is listed. */
export class GatewayConfigInvalid extends Schema.TaggedError<GatewayConfigInvalid>()("GatewayConfigInvalid", {
  problems: Schema.Array(Problem)
}) {
  override get message() {
    return `gateway config: ${this.problems.map((p) => `${p.path || "(root)"}: ${p.reason}`).join("; ")}`
  }
}

const defaultBase: Record<ProviderKind, string | undefined> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com/v1",
  "openai-compatible": undefined
}

/** Which client APIs a provider kind can serve (see docs/gateway.md). */
export const serves = (kind: ProviderKind, api: Api): boolean =>
  kind === "openai-compatible" ? true : kind === "openai" ? api !== "messages" : api !== "responses"

/** A provider's key from its variable or file, or the problem naming the setting (`i`: its index in providers). */
export const readProviderKey = (p: ProviderConfig, i: number) =>
  Effect.gen(function* () {
    if (p.apiKeyEnv !== undefined) {
      const key = yield* Config.redacted(p.apiKeyEnv).pipe(Effect.option)
      return Option.isSome(key) && Redacted.value(key.value).trim() !== ""
        ? { key: Option.some(Redacted.make(Redacted.value(key.value).trim())) }
        : { problem: Problem.make({ path: `providers.${i}.apiKeyEnv`, reason: `environment variable ${p.apiKeyEnv} is not set or empty` }) }
    }
    if (p.apiKeyFile !== undefined) {
      const file = p.apiKeyFile
      return yield* Effect.try(() => fs.readFileSync(file, "utf8").trim()).pipe(
        Effect.map((text) =>
          text === ""
            ? { problem: Problem.make({ path: `providers.${i}.apiKeyFile`, reason: `${file} is empty` }) }
            : { key: Option.some(Redacted.make(text)) }
        ),
        Effect.catchAll((e) => {
          const code = (e.error as NodeJS.ErrnoException | undefined)?.code ?? "error"
          return Effect.succeed({ problem: Problem.make({ path: `providers.${i}.apiKeyFile`, reason: `cannot read ${file}: ${code}` }) })
        })
      )
    }
    return p.kind === "openai-compatible"
      ? { key: Option.none<Redacted.Redacted<string>>() }
      : { problem: Problem.make({ path: `providers.${i}`, reason: `a ${p.kind} provider needs apiKeyEnv or apiKeyFile` }) }
  })

/** Resolves providers and groups; fails with every problem found. */
export const resolveCatalog = (
  providers: ReadonlyArray<ProviderConfig>,
  config: GatewayConfig
): Effect.Effect<Catalog, GatewayConfigInvalid> =>
  Effect.gen(function* () {
    const problems: Array<Problem> = []
    const byName = new Map<string, { p: ProviderConfig; key: Option.Option<Redacted.Redacted<string>>; url: URL }>()
    for (const [i, p] of providers.entries()) {
      const keyed = yield* readProviderKey(p, i)
      if ("problem" in keyed) problems.push(keyed.problem)
      const base = p.baseUrl ?? defaultBase[p.kind]
      if (base === undefined) {
        problems.push(Problem.make({ path: `providers.${i}.baseUrl`, reason: "an openai-compatible provider needs a baseUrl" }))
        continue
      }
      const url = URL.canParse(base) ? new URL(base) : undefined
      if (url === undefined) {
        problems.push(Problem.make({ path: `providers.${i}.baseUrl`, reason: "not a valid URL" }))
        continue
      }
      byName.set(p.name, { p, key: "key" in keyed ? keyed.key : Option.none(), url })
    }

    const deployments = new Map<string, Omit<Deployment, "coolable">>()
    const deployment = (provider: string, model: string, weight: number | undefined) => {
      const entry = byName.get(provider)!
      const id = `${provider}/${model}`
      const existing = deployments.get(id)
      if (existing) return existing
      const d = {
        id,
        provider,
        kind: entry.p.kind,
        model,
        weight: weight ?? entry.p.weight,
        protocol: entry.url.protocol === "https:" ? "https:" as const : "http:" as const,
        hostname: entry.url.hostname.replace(/^\[|\]$/g, ""),
        port: entry.url.port !== "" ? Number(entry.url.port) : entry.url.protocol === "https:" ? 443 : 80,
        basePath: entry.url.pathname.replace(/\/+$/, ""),
        key: entry.key,
        rpm: entry.p.rpm,
        tpm: entry.p.tpm
      }
      deployments.set(id, d)
      return d
    }

    const groups = new Map<string, { name: string; deployments: Array<Omit<Deployment, "coolable">>; fallbacks: ReadonlyArray<string> }>()
    config.modelGroups.forEach((g, i) => {
      if (groups.has(g.name)) problems.push(Problem.make({ path: `gateway.modelGroups.${i}.name`, reason: `duplicate model group '${g.name}'` }))
      const ds: Array<Omit<Deployment, "coolable">> = []
      g.deployments.forEach((gd, j) => {
        if (!byName.has(gd.provider)) {
          problems.push(Problem.make({ path: `gateway.modelGroups.${i}.deployments.${j}.provider`, reason: `unknown provider '${gd.provider}' (declared: ${[...byName.keys()].join(", ") || "none"})` }))
        } else ds.push(deployment(gd.provider, gd.model, gd.weight))
      })
      groups.set(g.name, { name: g.name, deployments: ds, fallbacks: g.fallbacks })
    })
    // Without a group, a provider's model is served under its own name (shared by providers listing it).
    for (const { p } of byName.values()) {
      for (const model of p.models) {
        const g = groups.get(model) ?? { name: model, deployments: [], fallbacks: [] }
        if (config.modelGroups.some((mg) => mg.name === model)) continue
        g.deployments.push(deployment(p.name, model, undefined))
        groups.set(model, g)
      }
    }
    config.modelGroups.forEach((g, i) =>
      g.fallbacks.forEach((f, j) => {
        if (!groups.has(f)) problems.push(Problem.make({ path: `gateway.modelGroups.${i}.fallbacks.${j}`, reason: `unknown model group '${f}'` }))
        if (f === g.name) problems.push(Problem.make({ path: `gateway.modelGroups.${i}.fallbacks.${j}`, reason: "a group cannot fall back to itself" }))
      })
    )
    if (problems.length > 0) return yield* new GatewayConfigInvalid({ problems })

    const coolable = (id: string) =>
      [...groups.values()].some((g) => g.deployments.some((d) => d.id === id) && (g.deployments.length > 1 || g.fallbacks.length > 0))
    const final = new Map<string, Deployment>([...deployments.values()].map((d) => [d.id, { ...d, coolable: coolable(d.id) }]))
    return {
      deployments: [...final.values()],
      groups: new Map([...groups.values()].map((g) => [g.name, { name: g.name, fallbacks: g.fallbacks, deployments: g.deployments.map((d) => final.get(d.id)!) }])),
      secrets: maskedKeys([...byName.values()].flatMap(({ key }) => Option.isSome(key) ? [Redacted.value(key.value)] : []))
    }
  })
