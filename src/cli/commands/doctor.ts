import { Command } from "@effect/cli"
import { Console, Effect, Either, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { HostConfig } from "../../config/HostConfig.js"
import * as Database from "../../db/Database.js"
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

/** One line per check: ok, warn or fail, plus how to fix. Exit 1 only on a fail. */
export const doctor = Command.make("doctor", {}, () =>
  Effect.gen(function* () {
    const checks: Array<Check> = [nodeCheck()]
    const loaded = yield* Effect.either(HostConfig.load)
    if (Either.isLeft(loaded)) {
      checks.push({ verdict: "fail", name: "config", detail: String(loaded.left.message).split("\n")[0] ?? "invalid", fix: "run `pynchy config check` for every problem" })
    } else {
      const cfg = loaded.right
      checks.push({ verdict: "ok", name: "config", detail: cfg.file._tag === "Some" ? cfg.file.value : "no file: embedded defaults" })
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
        const opened = yield* Effect.either(Effect.scoped(Layer.build(Database.layerFile(cfg.databaseFile))))
        checks.push(Either.isRight(opened)
          ? { verdict: "ok", name: "sqlite", detail: `${cfg.databaseFile} opens and is migrated` }
          : { verdict: "fail", name: "sqlite", detail: opened.left.message, fix: "check the file's permissions, or move it aside to start afresh" })
      }
    }
    checks.push(yield* sandboxCheck(Either.isRight(loaded) ? loaded.right.config : { containerRuntime: "auto", workspaces: [] }))
    if (Either.isRight(loaded)) {
      const providers = loaded.right.config.providers
      checks.push(providers.length > 0
        ? { verdict: "ok", name: "llm", detail: providers.map((p) => `${p.name} (${p.kind})`).join(", ") }
        : { verdict: "warn", name: "llm", detail: "no provider: agents answer with a notice saying how to configure one", fix: "set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add providers: to pynchy.yaml" })
    }
    checks.push(toolCheck("tmux", "not found: the local tmux runtime example cannot run", "apt-get install tmux"))
    for (const c of checks) {
      yield* Console.log(`${c.verdict.padEnd(4)}  ${c.name.padEnd(8)}  ${c.detail}${c.fix && c.verdict !== "ok" ? `  (fix: ${c.fix})` : ""}`)
    }
    if (checks.some((c) => c.verdict === "fail")) process.exitCode = 1
  })
).pipe(Command.withDescription("Check this machine and config: one line per check (ok, warn, fail) with how to fix."))
