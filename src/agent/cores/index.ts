/** The built-in agent cores the runner runs, by name (their host-side description: src/protocol/agent-cores.ts). */
import { anthropic } from "./anthropic.js"
import { openai } from "./openai.js"
import { scripted } from "./scripted.js"
import type { CoreRun } from "./types.js"

const RUNS: Readonly<Record<string, CoreRun>> = { openai, anthropic, scripted }

export const builtinCoreRun = (name: string): CoreRun | undefined => Object.hasOwn(RUNS, name) ? RUNS[name] : undefined
