#!/usr/bin/env -S node --max-semi-space-size=2
// The shipped entry point: runs the bundle built by `npm run build` (run by `npm ci` through
// `prepare`), dist/pynchy.cjs, with V8's code cache.
//
// Compiling the bundle is a good part of every command's start (the measured figures are in
// scripts/bench/README.md). So the bundle runs as a script compiled with the code a previous run
// left in dist/v8-cache/ (the build leaves one, made by a host it starts and stops), and a run that
// found none (or one V8 refused: another node, other V8 flags) leaves its own when it exits. The
// cache is only ever read from and written to the package's own folder, as trusted as the bundle
// itself; where that folder is read-only, every run compiles. A file per bundle, node and flag set,
// because V8 refuses a cache made under other flags and checks only the length of the source: the
// build writes the bundle's hash on its first line.
//
// A host is mostly idle: a small young generation keeps its resident memory low (the flag above),
// for more, cheaper scavenges under load.
//
// CommonJS, as the bundle is (bin/package.json says so): node starts a CommonJS entry point ~15 ms
// sooner than an ES module. Its path stays bin/pynchy.js: npx installs a checkout into its cache
// once and keeps the bin link it made then, so a renamed entry breaks `npx pynchy` in every
// checkout that had run it.
const fs = require("node:fs")
const { createRequire } = require("node:module")
const path = require("node:path")
const vm = require("node:vm")

const dist = path.join(__dirname, "../dist")
const bundle = path.join(dist, "pynchy.cjs")

/** FNV-1a, 32 bits: names a flag set in a file name (node:crypto would cost more than it saves). */
const fnv = (text) => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(16).padStart(8, "0")
}

const readOrUndefined = (file, encoding) => {
  try {
    return fs.readFileSync(file, encoding)
  } catch {
    return undefined
  }
}

/** The bundle compiled (from the cache when there is a usable one), and whether to write the cache at exit. */
const compile = () => {
  // The build makes the bundle ASCII, so latin1 reads it as utf8 would, at half the cost here.
  const source = readOrUndefined(bundle, "latin1")
  if (source === undefined) {
    console.error("pynchy: dist/pynchy.cjs is missing; run `npm run build` in the package folder.")
    process.exit(1)
  }
  const bundleHash = /^\/\* pynchy-bundle ([0-9a-f]{64}) \*\//.exec(source)?.[1].slice(0, 24) ?? `unhashed-${source.length}`
  const flags = [process.version, process.arch, ...process.execArgv, process.env.NODE_OPTIONS ?? ""].join("\0")
  const cacheFile = path.join(dist, "v8-cache", `${bundleHash}-${fnv(flags)}.bin`)
  const cachedData = readOrUndefined(cacheFile)
  // Strict, as the ES modules the bundle was made of were. (Neither the source nor the cache
  // outlives this function: V8 keeps what it needs.)
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {"use strict";${source}\n})`, { filename: bundle, cachedData })
  return { script, cacheFile, stale: cachedData === undefined || script.cachedDataRejected === true }
}

const { script, cacheFile, stale } = compile()

if (stale) {
  // At exit, the code cache holds every function this run compiled, not just the top level.
  process.once("exit", () => {
    const temp = `${cacheFile}.${process.pid}`
    try {
      fs.mkdirSync(path.dirname(cacheFile), { recursive: true })
      fs.writeFileSync(temp, script.createCachedData())
      // Readable by every user of the package (the CLI's own umask is 077); it holds only compiled code.
      fs.chmodSync(temp, 0o644)
      fs.renameSync(temp, cacheFile)
    } catch {
      // A read-only package folder: every run compiles, which is only slower. Never an error.
      try {
        fs.rmSync(temp, { force: true })
      } catch {
        // Nothing was written.
      }
    }
  })
}

// node 20 loses a cached script's import() callback: the bundle imports through this module's
// (src/system/import-module.ts), which resolves from the package just as the bundle would.
globalThis[Symbol.for("pynchy.import")] = (specifier) => import(specifier)

const bundleModule = { exports: {} }
script.runInThisContext()(bundleModule.exports, createRequire(bundle), bundleModule, bundle, dist)
