// Module resolution hook (node:module register): logs each resolved URL, one per line.
import { appendFileSync } from "node:fs"

const log = process.env.PYNCHY_TEST_MODULE_LOG

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  if (log) appendFileSync(log, `${resolved.url}\n`)
  return resolved
}
