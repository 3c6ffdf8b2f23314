/**
 * What `pynchy doctor` checks (./doctor.ts loads this module when the command runs: the channel
 * checks bring the platforms' clients, which nothing else on the start path needs).
 */
import { Console, Effect, Either, Layer, Option } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { HostConfig } from "../../config/HostConfig.js"
import { clusterCheck } from "../../cluster/doctor.js"
import * as Database from "../../db/Database.js"
import { problemLine } from "../../domain/problems.js"
import { type Deployment, resolveCatalog } from "../../gateway/catalog.js"
import { probeProvider } from "../../gateway/probe.js"
import { checkConfig } from "../../host/preflight.js"
import { slackChecks } from "../../channels/slack/doctor.js"
import { telegramChecks } from "../../channels/telegram/doctor.js"
import { discordChecks } from "../../channels/discord/doctor.js"
import { installCommand, isInstalled, OPTIONAL_PLUGINS } from "../../plugins/first-party.js"
import { builtinCoreInfo } from "../../protocol/agent-cores.js"
import { hostPackageRoot } from "../../plugins/paths.js"
import { pluginChecks } from "./doctor-plugins.js"
import { type BwrapProbe, bwrapProbe, choicesOf, type SandboxChoices, UNISOLATED_WARNING } from "../../sandbox/select.js"

type Verdict = "ok" | "warn" | "fail"
export interface Check {
  readonly verdict: Verdict
  readonly name: string
  readonly detail: string
  readonly fix?: string
}

const which = (cmd: string): string | null => {
  try {
    return execFileSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).trim() || null
  } catch {
    return null
  }
}

const nodeCheck = (): Check => {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
  return major > 20 || (major === 20 && minor >= 19)
    ? { verdict: "ok", name: "node", detail: process.versions.node }
    : { verdict: "fail", name: "node", detail: process.versions.node, fix: "install Node.js 20.19 or newer" }
}

const toolCheck = (cmd: string, missing: string, fix: string): Check => {
  const found = which(cmd)
  return found ? { verdict: "ok", name: cmd, detail: found } : { verdict: "warn", name: cmd, detail: missing, fix }
}

/**
 * Whether turns run isolated, by the same rules as the turns themselves (`chooseRuntime`): `auto`
 * without bwrap runs agents unisolated (warn); a bwrap that is installed but cannot start a
 * sandbox fails every turn that wants it (fail). `process` chosen in config is what was asked for.
 */
export const sandboxCheck = (config: SandboxChoices, probe: BwrapProbe = bwrapProbe): Effect.Effect<Check> =>
  Effect.gen(function* () {
    const choices = choicesOf(config)
    const named = [...choices].join(", ")
    if (!choices.has("auto") && !choices.has("bwrap")) {
      const detail = choices.has("process")
        ? `containerRuntime: ${named} (process chosen in config: agents run as plain child processes, unisolated)`
        : `containerRuntime: ${named}`
      return { verdict: "ok", name: "sandbox", detail }
    }
    if (!probe.installed()) {
      return choices.has("bwrap")
        ? { verdict: "fail", name: "sandbox", detail: "containerRuntime bwrap: bwrap is not installed, so turns fail", fix: "apt-get install bubblewrap" }
        : { verdict: "warn", name: "sandbox", detail: UNISOLATED_WARNING, fix: "apt-get install bubblewrap" }
    }
    const r = yield* Effect.tryPromise(probe.available).pipe(Effect.orElseSucceed(() => ({ ok: false, reason: "its availability check threw" })))
    if (!r.ok) {
      return {
        verdict: "fail",
        name: "sandbox",
        detail: `bwrap is installed but cannot start a sandbox here (${r.reason ?? "no reason given"}): turns fail with sandbox_unavailable`,
        fix: "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0), run in a VM, or set containerRuntime: process to run agents unisolated on purpose"
      }
    }
    const found = which("bwrap")
    return { verdict: "ok", name: "sandbox", detail: `bwrap${found !== null ? ` (${found})` : ""}: no network, private namespaces` }
  })

/**
 * Each provider probed once (GET /models, or a one-token request where that is not served):
 * a baseUrl nothing answers, or a refused key, fails here instead of at the first message.
 */
const providerChecks = (host: HostConfig.Service): Effect.Effect<ReadonlyArray<Check>> =>
  Effect.gen(function* () {
    const { providers, gateway } = host.config
    if (providers.length === 0) {
      return [{ verdict: "warn", name: "llm", detail: "no provider: agents answer with a notice saying how to configure one", fix: "set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add providers: to pynchy.yaml" }]
    }
    const catalog = yield* Effect.either(resolveCatalog(providers, gateway))
    if (Either.isLeft(catalog)) return [] // the config check above already failed with these problems
    const first = new Map<string, Deployment>()
    for (const d of catalog.right.deployments) if (!first.has(d.provider)) first.set(d.provider, d)
    return yield* Effect.forEach(providers, (p, i): Effect.Effect<Check> => {
      const d = first.get(p.name)
      if (d === undefined) return Effect.succeed({ verdict: "warn", name: "llm", detail: `${p.name}: serves no model (models: is empty and no group names it)`, fix: `add models to providers.${i}` })
      return probeProvider(d).pipe(
        Effect.match({
          onSuccess: (what): Check => ({ verdict: "ok", name: "llm", detail: `${p.name} (${p.kind}): ${what}` }),
          onFailure: (e): Check => ({ verdict: "fail", name: "llm", detail: `providers.${i}.baseUrl: ${p.name}: ${e.reason}`, fix: "check baseUrl, that the server runs, and the key" })
        })
      )
    }, { concurrency: "unbounded" })
  })

/**
 * Whether each optional first-party plugin (plugins/<name>/) is installed: a fail only when a
 * workspace selects one of its agent cores, whose turns would then fail.
 */
export const optionalPluginChecks = (workspaces: ReadonlyArray<{ readonly id: string; readonly agentCore?: string | undefined }>, root = hostPackageRoot()): Array<Check> =>
  OPTIONAL_PLUGINS.map((p): Check => {
    if (isInstalled(root, p)) return { verdict: "ok", name: p.name, detail: `installed (${p.folder}): agentCore ${p.agentCores.join(", ")} available` }
    const users = workspaces.filter((w) => w.agentCore !== undefined && p.agentCores.includes(w.agentCore)).map((w) => w.id)
    return users.length > 0
      ? { verdict: "fail", name: p.name, detail: `not installed, but workspace ${users.join(", ")} selects its agent core: those turns fail with agent_core_not_installed`, fix: installCommand(p) }
      : { verdict: "ok", name: p.name, detail: `not installed (optional; install with \`${installCommand(p)}\`)` }
  })

interface TokenWorkspace {
  readonly id: string
  readonly agentCore?: string | undefined
  readonly sandbox?: { readonly runtime?: string | undefined } | undefined
}

/**
 * Where a turn's tools can reach its gateway token (docs/sandbox.md, threat model): a plugin core
 * (Claude Code among them) runs its own tool loop with the token by design, and the docker
 * runtime does not start the runner non-dumpable. Named once per workspace; a workspace with a
 * built-in core under bwrap is protected and says nothing.
 */
export const tokenExposureChecks = (config: { readonly containerRuntime: string; readonly workspaces: ReadonlyArray<TokenWorkspace> }): Array<Check> =>
  config.workspaces.flatMap((w): Array<Check> => {
    const runtime = w.sandbox?.runtime ?? config.containerRuntime
    if (w.agentCore !== undefined && builtinCoreInfo(w.agentCore) === undefined) {
      return [{
        verdict: "ok",
        name: "token",
        detail: `workspace ${w.id}: agent core ${w.agentCore} runs its own tools with the turn token, so they can use it until the turn ends (by design: docs/agent-cores.md)`
      }]
    }
    if (runtime === "docker") {
      return [{
        verdict: "warn",
        name: "token",
        detail: `workspace ${w.id}: under docker the runner is not made non-dumpable, so its tools can read the turn token from its memory`,
        fix: "use bwrap (containerRuntime: auto or bwrap)"
      }]
    }
    return []
  })

/** Runs every check and prints one line each: ok, warn or fail, plus how to fix. Exit 1 only on a fail. */
export const runDoctor = Effect.gen(function* () {
  const checks: Array<Check> = [nodeCheck()]
  const checked = yield* checkConfig
  const loaded: Either.Either<HostConfig.Service, string> = Option.match(checked.loaded, {
    onNone: () => Either.left(checked.problems.map(problemLine)[0] ?? "invalid"),
    onSome: (c) => Either.right(c)
  })
  if (Either.isLeft(loaded) || checked.problems.length > 0) {
    const first = checked.problems[0]
    checks.push({
      verdict: "fail",
      name: "config",
      detail: `${checked.problems.length} problem(s)${first !== undefined ? `; first: ${problemLine(first)}` : ""}`,
      fix: "run `pynchy config check` for every problem"
    })
  } else {
    checks.push({ verdict: "ok", name: "config", detail: Option.getOrElse(checked.file, () => "no file: embedded defaults") })
  }
  if (Either.isRight(loaded)) {
    const cfg = loaded.right
    const writable = yield* Effect.either(Effect.try(() => {
      fs.mkdirSync(cfg.dataDir, { recursive: true })
      const probe = path.join(cfg.dataDir, `.doctor-${process.pid}`)
      fs.writeFileSync(probe, "")
      fs.rmSync(probe)
    }))
    checks.push(Either.isRight(writable)
      ? { verdict: "ok", name: "data dir", detail: `${cfg.dataDir} is writable` }
      : { verdict: "fail", name: "data dir", detail: `${cfg.dataDir} is not writable`, fix: "set dataDir in pynchy.yaml or PYNCHY_DATA_DIR to a writable folder" })
    if (Either.isRight(writable)) {
      const opened = yield* Effect.either(Effect.scoped(Layer.build(Database.layerOf(cfg))))
      const name = Option.isSome(cfg.databaseUrl) ? "postgres" : "sqlite"
      checks.push(Either.isRight(opened)
        ? { verdict: "ok", name, detail: `${Database.location(cfg)} opens and is migrated` }
        : { verdict: "fail", name, detail: opened.left.message, fix: Option.isSome(cfg.databaseUrl) ? "check the server is up and the URL's user, password and database (docs/deploy.md)" : "check the file's permissions, or move it aside to start afresh" })
      if (Either.isRight(opened)) checks.push(...Option.toArray(yield* clusterCheck(cfg)))
    }
  }
  checks.push(yield* sandboxCheck(Either.isRight(loaded) ? loaded.right.config : { containerRuntime: "auto", workspaces: [] }))
  if (Either.isRight(loaded)) checks.push(...(yield* providerChecks(loaded.right)), ...(yield* pluginChecks(loaded.right)))
  checks.push(...optionalPluginChecks(Either.isRight(loaded) ? loaded.right.config.workspaces : []))
  if (Either.isRight(loaded)) checks.push(...tokenExposureChecks(loaded.right.config))
  if (Either.isRight(loaded)) checks.push(...(yield* telegramChecks(loaded.right.config, loaded.right.dataDir)))
  if (Either.isRight(loaded)) checks.push(...(yield* slackChecks(loaded.right.config)))
  if (Either.isRight(loaded)) checks.push(...(yield* discordChecks(loaded.right.config, loaded.right.dataDir)))
  checks.push(toolCheck("tmux", "not found: the local tmux runtime example cannot run", "apt-get install tmux"))
  // Spoken replies (docs/channels.md): without them a voice workspace's replies go out as text only.
  checks.push(toolCheck("espeak-ng", "not found: the built-in speech synthesizer (voice: espeak) makes no audio, replies go out as text only", "apt-get install espeak-ng"))
  checks.push(toolCheck("opusenc", "not found: no OGG/Opus audio, so no voice notes where a platform wants them (Telegram)", "apt-get install opus-tools"))
  for (const c of checks) {
    yield* Console.log(`${c.verdict.padEnd(4)}  ${c.name.padEnd(8)}  ${c.detail}${c.fix && c.verdict !== "ok" ? `  (fix: ${c.fix})` : ""}`)
  }
  if (checks.some((c) => c.verdict === "fail")) process.exitCode = 1
})
