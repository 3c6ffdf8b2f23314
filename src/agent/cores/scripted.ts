/**
 * A deterministic core for tests and offline demos: `echo: <text>` per message. `!fail` fails the
 * attempt (retryable), `!fatal` for good, `!tool <action id> <json>` calls a host action and
 * replies with its outcome, `!hang` never finishes (for deadline and kill tests), and
 * `!hold <file> <text>` streams `echo: <text>`, then replies only once `<file>` exists in the
 * workspace (so a test can see the streamed text before the reply, with no timing).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { toolNameOf } from "../../protocol/ipc.js"
import { workspaceDir } from "../tools/paths.js"
import { CoreFailed, type CoreRun } from "./types.js"

export const scripted: CoreRun = async (ctx) => {
  for (const m of ctx.turn.messages) {
    if (m.text.startsWith("!fatal")) throw new CoreFailed("scripted_fatal", "asked to fail", false)
    if (m.text.startsWith("!hang")) await new Promise(() => setInterval(() => {}, 60_000))
    if (m.text.startsWith("!fail")) throw new CoreFailed("scripted_failure", "asked to fail", true)
    const hold = /^!hold\s+([A-Za-z0-9._-]+)\s+([\s\S]*)$/.exec(m.text)
    if (hold !== null) {
      ctx.delta(`echo: ${hold[2]}`)
      const file = path.join(workspaceDir(), hold[1]!)
      while (!fs.existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 20))
      ctx.reply(`echo: ${hold[2]}`)
      continue
    }
    const tool = /^!tool\s+(\S+)\s*([\s\S]*)$/.exec(m.text)
    if (tool !== null) {
      let input: unknown = {}
      try {
        input = tool[2]!.trim() === "" ? {} : JSON.parse(tool[2]!)
      } catch {
        input = tool[2]
      }
      const outcome = await ctx.callTool(toolNameOf(tool[1]!), input)
      ctx.reply(`${outcome.ok ? "tool ok" : "tool refused"}: ${JSON.stringify(outcome.output)}`)
      continue
    }
    ctx.delta(`echo: ${m.text}`)
    ctx.reply(`echo: ${m.text}`)
  }
}
