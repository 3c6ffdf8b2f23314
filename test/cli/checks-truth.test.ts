/**
 * The three false "all is well" cases of issue 20, through the built CLI: an unset apiKeyEnv and
 * an HTTP token written in plain text fail `config check`; a provider baseUrl nothing answers
 * fails `doctor`. Each is one line naming its path; the plain token is never echoed.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { BIN, cleanEnv } from "../support/cli.js"
import { tempDir } from "../support/db.js"

const withConfig = (yaml: string) => {
  const dir = tempDir()
  fs.writeFileSync(path.join(dir, "pynchy.yaml"), yaml)
  return dir
}

/** The CLI run without blocking this process's event loop (a server in this test must answer it). */
const runCliAsync = (args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env: cleanEnv(), encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr }))
  })

const closedPort = async () => {
  const server = http.createServer()
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((r) => server.close(() => r()))
  return port
}

describe("checks that tell the truth", () => {
  it("config check fails on an apiKeyEnv that is not set, naming the path in one line", async () => {
    const dir = withConfig("providers:\n  - { name: openai, kind: openai, apiKeyEnv: PYNCHY_TEST_NO_SUCH_KEY, models: [gpt-4o-mini] }\n")
    const r = await runCliAsync(["config", "check"], dir)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /^ {2}- providers\.0\.apiKeyEnv: environment variable PYNCHY_TEST_NO_SUCH_KEY is not set or empty$/m)
  })

  it("config check fails on an HTTP token in plain text, names the path and never echoes the token", async () => {
    const dir = withConfig([
      "connections:",
      "  api: { kind: http, port: 0, tokens: [my-plain-secret-token] }",
      "routes:",
      "  - { connection: api, place: \"*\", workspace: main }",
      ""
    ].join("\n"))
    const r = await runCliAsync(["config", "check"], dir)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /^ {2}- connections\.api\.tokens\.0: must be the SHA-256 hex digest of a token .*\(found a string of 21 characters\)$/m)
    assert.notInclude(r.stderr + r.stdout, "my-plain-secret-token")
  })

  it("config errors are one line each, never a whole section (the README's old placeholder)", async () => {
    const dir = withConfig("gateway:\n  listen: { socket: true }\n  modelGroups: [{ name: smart, deployments: [...] }]\n  routing: weighted-shuffle\n")
    const r = await runCliAsync(["config", "check"], dir)
    assert.strictEqual(r.code, 1)
    const lines = r.stderr.trim().split("\n")
    assert.deepStrictEqual(lines.slice(1), ["  - gateway.modelGroups.0.deployments.0: wrong kind of value (found a string of 3 characters; expected a mapping with provider, model)"])
  })

  it("doctor fails on a provider baseUrl nothing answers, naming the path", async () => {
    const port = await closedPort()
    const dir = withConfig(`providers:\n  - { name: local, kind: openai-compatible, baseUrl: "http://127.0.0.1:${port}/v1", models: [tiny] }\n`)
    assert.strictEqual((await runCliAsync(["config", "check"], dir)).code, 0, "the file itself is fine")
    const r = await runCliAsync(["doctor"], dir)
    assert.strictEqual(r.code, 1)
    assert.match(r.stdout, new RegExp(`^fail\\s+llm\\s+providers\\.0\\.baseUrl: local: nothing answers at http://127\\.0\\.0\\.1:${port}/v1 \\(ECONNREFUSED\\)`, "m"))
  })

  it("doctor probes a provider that answers: GET /models, or a one-token request where /models is not served", async () => {
    const seen: Array<string> = []
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`)
      req.resume()
      if (req.url === "/v1/models" && req.headers.authorization === "Bearer k-models") return res.end("{\"data\":[]}")
      if (req.url === "/v1/chat/completions") return res.end("{}")
      res.statusCode = 404
      res.end()
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const port = (server.address() as AddressInfo).port
    try {
      const keys = tempDir()
      fs.writeFileSync(path.join(keys, "a"), "k-models\n")
      fs.writeFileSync(path.join(keys, "b"), "k-chat\n")
      const dir = withConfig([
        "providers:",
        `  - { name: a, kind: openai-compatible, baseUrl: "http://127.0.0.1:${port}/v1", apiKeyFile: ${path.join(keys, "a")}, models: [m1] }`,
        `  - { name: b, kind: openai-compatible, baseUrl: "http://127.0.0.1:${port}/v1", apiKeyFile: ${path.join(keys, "b")}, models: [m2] }`,
        ""
      ].join("\n"))
      const r = await runCliAsync(["doctor"], dir)
      assert.match(r.stdout, /^ok\s+llm\s+a \(openai-compatible\): GET \/models answered 200$/m)
      assert.match(r.stdout, /^ok\s+llm\s+b \(openai-compatible\): a one-token request to \/chat\/completions answered 200$/m)
      assert.include(seen, "GET /v1/models Bearer k-models")
      assert.include(seen, "POST /v1/chat/completions Bearer k-chat")
    } finally {
      await new Promise<void>((r) => server.close(() => r()))
    }
  })
})
