import { Either } from "effect"
import { Problem } from "../domain/errors.js"
import type { PynchyConfig } from "./schema.js"
import { hostTimeZone, isKnownZone, parseCron } from "../domain/due.js"
import { placeProblem } from "../domain/place.js"

/** Connections every host has without declaring them: `cli` (stdout) and `terminal`. */
export const BUILTIN_CONNECTIONS: ReadonlyArray<string> = ["cli", "terminal"]

/** `<connection>:<place>` split at the first colon. */
export const parseDeliverTo = (text: string): { readonly connection: string; readonly place: string } => {
  const i = text.indexOf(":")
  return { connection: text.slice(0, i), place: text.slice(i + 1) }
}

/**
 * The schedule rules Schema alone cannot see, each with its path: a schedule needs a prompt and a
 * destination, its cron must parse in its zone, the zone must exist, and the destination's
 * connection must be declared (or built in).
 */
export const scheduleProblems = (config: PynchyConfig): Array<Problem> => {
  const problems: Array<Problem> = []
  const connections = new Set([...BUILTIN_CONNECTIONS, ...Object.keys(config.connections)])
  config.workspaces.forEach((w, i) => {
    const at = (field: string, reason: string) => problems.push(Problem.make({ path: `workspaces.${i}.${field}`, reason }))
    const zone = w.timezone ?? hostTimeZone()
    if (w.timezone !== undefined && !isKnownZone(w.timezone)) at("timezone", `unknown time zone '${w.timezone}' (an IANA name such as Europe/Berlin)`)
    if (w.deliverTo !== undefined) {
      const { connection, place } = parseDeliverTo(w.deliverTo)
      if (!connections.has(connection)) at("deliverTo", `unknown connection '${connection}' (declared: ${[...connections].join(", ")})`)
      const wrong = placeProblem(place)
      if (wrong !== undefined) at("deliverTo", `the place (after ':') ${wrong}`)
    }
    if (w.schedule === undefined) return
    if (isKnownZone(zone)) {
      const parsed = parseCron(w.schedule, zone)
      if (Either.isLeft(parsed)) at("schedule", `not a cron expression: ${parsed.left}`)
    }
    if (w.scheduledPrompt === undefined) at("scheduledPrompt", "required with schedule: the text of each periodic turn")
    if (w.deliverTo === undefined) at("deliverTo", "required with schedule: <connection>:<place> where its replies go")
  })
  return problems
}
