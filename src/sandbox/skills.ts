/**
 * The skills a turn gets: the plugins' skill folders plus `<workspace folder>/skills/*`, filtered
 * per workspace (tier `core` always, others when the workspace lists them by name; a workspace's
 * own skills always), then mounted read-only at `/skills/<name>`. A name is mounted once: the
 * first holder wins, so a workspace cannot shadow a plugin's (core) skill.
 */
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Workspace } from "../domain/workspace.js"
import { CATEGORIES, type SkillFolder } from "../plugins/contributions.js"
import { isSafeName } from "./runtime.js"

export interface TurnSkill {
  readonly name: string
  readonly description: string
  readonly tier: string
  /** Host folder. */
  readonly path: string
}

/** The workspace's own skill folders (each with a readable SKILL.md); unreadable ones are left out. */
export const workspaceSkills = (workspaceDir: string): Array<SkillFolder> => {
  const root = path.join(workspaceDir, "skills")
  let entries: Array<fs.Dirent>
  try {
    entries = fs.readdirSync(root, { withFileTypes: true })
  } catch {
    return []
  }
  return entries
    .filter((e) => e.isDirectory())
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => Either.match(CATEGORIES.skillPaths.check(path.join(root, e.name)), { onLeft: () => [], onRight: (c) => [c.value] }))
}

export const skillsFor = (workspace: Workspace, pluginSkills: ReadonlyArray<SkillFolder>, workspaceDir: string): Array<TurnSkill> => {
  const enabled = new Set(workspace.skills)
  const chosen = new Map<string, TurnSkill>()
  const add = (s: SkillFolder) => {
    if (!isSafeName(s.name) || chosen.has(s.name)) return
    chosen.set(s.name, { name: s.name, description: s.description ?? "", tier: s.tier ?? "standard", path: s.path })
  }
  for (const s of pluginSkills) if (s.tier === "core" || enabled.has(s.name)) add(s)
  for (const s of workspaceSkills(workspaceDir)) add(s)
  return [...chosen.values()]
}
