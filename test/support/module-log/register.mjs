// `node --import <this file>`: every module the process resolves, by import (a resolve hook) or by
// require (the CommonJS resolver), is appended to $PYNCHY_TEST_MODULE_LOG, one per line.
import { appendFileSync } from "node:fs"
import Module, { register } from "node:module"
import { pathToFileURL } from "node:url"

register("./hooks.mjs", import.meta.url)

const log = process.env.PYNCHY_TEST_MODULE_LOG
const resolveFilename = Module._resolveFilename
Module._resolveFilename = function (...args) {
  const file = resolveFilename.apply(this, args)
  if (log) appendFileSync(log, `${file.startsWith("/") ? pathToFileURL(file).href : file}\n`)
  return file
}
