import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { EXAMPLE, inspectAt, tempProject } from "./support.js"

// Asynchronous, so a slow npm under load never blocks the test worker's RPC to vitest.
const npm = (cwd: string, args: ReadonlyArray<string>) =>
  Effect.async<string>((resume) => {
    execFile("npm", ["--no-audit", "--no-fund", "--offline", "--loglevel=error", ...args], { cwd, encoding: "utf8" }, (error, stdout, stderr) =>
      resume(error === null ? Effect.succeed(stdout) : Effect.die(new Error(`npm ${args.join(" ")} failed: ${stderr}`, { cause: error })))
    )
  })

/** Discovery as the host runs it at startup, with the temp project as the node_modules root. */
const discover = (root: string) => inspectAt(root)

const assertHello = (root: string) =>
  Effect.gen(function* () {
    const { faults, registry } = yield* discover(root)
    assert.deepStrictEqual(faults, [])
    const hello = registry.plugins.find((p) => p.name === "hello")
    assert.isDefined(hello)
    assert.deepStrictEqual(hello!.source._tag === "package" && [hello!.source.name, hello!.source.version], ["pynchy-plugin-hello", "0.1.0"])
    assert.deepStrictEqual(hello!.contributions, { serviceHandler: ["hello.greet"], skillPaths: ["hello"] })
    const skill = registry.skills.find((s) => s.name === "hello")!
    assert.strictEqual(skill.value.tier, "community")
    assert.isTrue(fs.existsSync(path.join(skill.value.path, "SKILL.md")))
    const greet = registry.serviceHandlers.find((h) => h.name === "hello.greet")!
    assert.strictEqual(greet.value.risk, "low")
    assert.deepStrictEqual(yield* Effect.promise(async () => greet.value.handler({ name: "Ada" })), { text: "Hello, Ada!" })
  })

const assertGone = (root: string) =>
  Effect.gen(function* () {
    const { faults, registry } = yield* discover(root)
    assert.deepStrictEqual(faults, [])
    assert.isUndefined(registry.plugins.find((p) => p.name === "hello"))
    assert.deepStrictEqual(registry.serviceHandlers, [])
  })

describe("examples/plugin-hello: install, restart, done; uninstall and it is gone (real npm)", () => {
  it.effect("installed from its folder", () =>
    Effect.gen(function* () {
      const root = tempProject()
      yield* assertGone(root)
      yield* npm(root, ["install", EXAMPLE])
      yield* assertHello(root)
      yield* npm(root, ["uninstall", "pynchy-plugin-hello"])
      assert.isFalse(fs.existsSync(path.join(root, "node_modules", "pynchy-plugin-hello")))
      yield* assertGone(root)
    }), 60_000)

  it.effect("installed from its packed tarball (files copied, as from a registry)", () =>
    Effect.gen(function* () {
      const root = tempProject()
      const tarball = (yield* npm(root, ["pack", "--silent", "--pack-destination", root, EXAMPLE])).trim().split("\n").pop()!
      yield* npm(root, ["install", path.join(root, tarball)])
      assert.isFalse(fs.lstatSync(path.join(root, "node_modules", "pynchy-plugin-hello")).isSymbolicLink())
      yield* assertHello(root)
      yield* npm(root, ["uninstall", "pynchy-plugin-hello"])
      yield* assertGone(root)
    }), 60_000)
})
