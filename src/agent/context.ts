/**
 * What a core's request holds, in order: the system prompt (workspace instructions, skills,
 * AGENTS.md and MEMORY.md, then the conversation's summary), the earlier exchange as user and
 * assistant messages (oldest first, a user's sender prefixed where the host set one), then the
 * turn's new messages. Tool calls of earlier turns are not in the spec and never replayed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { HistoryEntry, TurnSpec } from "../protocol/ipc.js"
import { readWorkspaceFiles, workspaceFileSection } from "./workspace-files.js"

export interface Folders {
  readonly skillsDir: string
  readonly workspaceDir: string
}

const skillSections = (turn: TurnSpec, skillsDir: string): Array<string> =>
  turn.skills.flatMap((skill) => {
    try {
      const text = fs.readFileSync(path.join(skillsDir, skill.name, "SKILL.md"), "utf8")
      return [`# Skill: ${skill.name}\n${text.replace(/^---\r?\n[\s\S]*?\r?\n---\r?\n?/, "").trim()}`]
    } catch {
      // a skill that cannot be read is left out
      return []
    }
  })

/**
 * The summary goes in the system prompt, as its last section, rather than as a leading
 * user/assistant pair: a pair would put words in the assistant's mouth it never said, and the
 * history after it would then have to start with a user message to keep the roles alternating
 * (Anthropic requires that). As system text it is read first, by both APIs, without either cost.
 */
export const summarySection = (summary: string | null): ReadonlyArray<string> =>
  summary === null || summary.trim() === ""
    ? []
    : [`# Earlier in this conversation (summary)\nThe messages below continue a conversation; this summarizes what came before them:\n${summary.trim()}`]

export const systemPrompt = (turn: TurnSpec, folders: Folders): string =>
  [
    turn.workspace.instructions.trim(),
    ...skillSections(turn, folders.skillsDir),
    ...readWorkspaceFiles(folders.workspaceDir).map(workspaceFileSection),
    ...summarySection(turn.summary)
  ].filter((p) => p !== "").join("\n\n")

export interface ChatTurn {
  readonly role: "user" | "assistant"
  readonly text: string
}

const historyText = (h: HistoryEntry): string => (h.role === "user" && h.sender !== undefined && h.sender !== "" ? `${h.sender}: ${h.text}` : h.text)

/** The history then the new messages, one entry each (the OpenAI chat form). */
export const conversation = (turn: TurnSpec): ReadonlyArray<ChatTurn> => [
  ...turn.history.map((h) => ({ role: h.role, text: historyText(h) })),
  ...turn.messages.map((m) => ({ role: "user" as const, text: m.text }))
]

/**
 * The same for the Messages API, which wants alternating roles starting with the user:
 * neighbours of one role are joined, and a history that starts with a reply gets a short
 * user line before it.
 */
export const alternating = (turns: ReadonlyArray<ChatTurn>): ReadonlyArray<ChatTurn> => {
  const out: Array<ChatTurn> = []
  for (const t of turns) {
    const last = out.at(-1)
    if (last !== undefined && last.role === t.role) out[out.length - 1] = { role: t.role, text: `${last.text}\n\n${t.text}` }
    else out.push(t)
  }
  if (out[0]?.role === "assistant") out.unshift({ role: "user", text: "(earlier in this conversation)" })
  return out
}
