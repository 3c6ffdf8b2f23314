/**
 * The skills a turn gets: the plugins' skill folders plus `<workspace folder>/skills/*`, filtered
 * per workspace (tier `core` always, others when the workspace lists them by name; a workspace's
 * own skills always), then mounted read-only at `/skills/<name>`. A name is mounted once: the
 * first holder wins, so a workspace cannot shadow a plugin's (core) skill.
 *
 * `<workspace>/skills` lies in a folder the agent can write, so it is read as untrusted input
 * (untrusted.ts): a link, a FIFO or an oversized SKILL.md is left out, never followed or waited
 * on. Sandboxes see that folder read-only, so a turn cannot change the skills of later turns.
 */
import { Effect } from "effect"
import * as Either from "effect/Either"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import type { Workspace } from "../domain/workspace.js"
import { type SkillFolder, skillFolderFrom } from "../plugins/contributions.js"
import { isSafeName } from "./runtime.js"
import { readUntrusted } from "../untrusted/untrusted.js"

export interface TurnSkill {
  readonly name: string
  readonly description: string
  readonly tier: string
  /** Host folder. */
  readonly path: string
}

/** The most a workspace's SKILL.md may hold. */
export const MAX_SKILL_BYTES = 64 * 1024

export const workspaceSkillsDir = (workspaceDir: string) => path.join(workspaceDir, "skills")

/** The workspace's own skill folders, each with a regular, readable SKILL.md; the rest are left out with a logged reason. */
export const workspaceSkills = (workspaceDir: string): Effect.Effect<Array<SkillFolder>> =>
  Effect.gen(function* () {
    const root = workspaceSkillsDir(workspaceDir)
    const entries = yield* Effect.promise(async () => {
      const stat = await fsp.lstat(root).catch(() => undefined)
      if (stat === undefined || !stat.isDirectory()) return []
      return (await fsp.readdir(root, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).map((e) => e.name).sort()
    })
    const found: Array<SkillFolder> = []
    for (const name of entries) {
      const folder = path.join(root, name)
      const read = yield* Effect.promise(() => readUntrusted(root, path.join(folder, "SKILL.md"), MAX_SKILL_BYTES))
      if (read._tag === "Refused") {
        yield* Effect.logWarning("workspace skill left out").pipe(Effect.annotateLogs({ skill: name, reason: read.reason }))
        continue
      }
      Either.match(skillFolderFrom(folder, read.text), { onLeft: () => undefined, onRight: (c) => found.push(c.value) })
    }
    return found
  })

export const skillsFor = (workspace: Workspace, pluginSkills: ReadonlyArray<SkillFolder>, workspaceDir: string): Effect.Effect<Array<TurnSkill>> =>
  Effect.map(workspaceSkills(workspaceDir), (own) => {
    const enabled = new Set(workspace.skills)
    const chosen = new Map<string, TurnSkill>()
    const add = (s: SkillFolder) => {
      if (!isSafeName(s.name) || chosen.has(s.name)) return
      chosen.set(s.name, { name: s.name, description: s.description ?? "", tier: s.tier ?? "standard", path: s.path })
    }
    for (const s of pluginSkills) if (s.tier === "core" || enabled.has(s.name)) add(s)
    for (const s of own) add(s)
    return [...chosen.values()]
  })
