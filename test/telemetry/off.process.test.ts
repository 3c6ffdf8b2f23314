/**
 * The built CLI as real processes: with OTEL_EXPORTER_OTLP_ENDPOINT unset, neither `pynchy start`
 * nor `pynchy send` loads an OpenTelemetry module (a resolve hook logs every module each process
 * loads); with it set, both load them and export: the message sent by `pynchy send` and the turn
 * the host ran for it arrive at an OTLP/HTTP receiver as one trace.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { hostProject, killAllHosts, stopHost } from "../channels/host-process.js"
import { waitFor } from "../support/eventually.js"
import { type OtlpReceiver, otlpReceiver } from "../support/otlp.js"

const REGISTER = pathToFileURL(path.resolve(import.meta.dirname, "../support/module-log/register.mjs")).href

afterAll(killAllHosts)

/** One message through `pynchy send` to a running `pynchy start`; returns the modules each process loaded. */
const roundTrip = async (otel: Record<string, string>) => {
  const project = hostProject({ yaml: () => ["containerRuntime: process", "workspaces: [{ id: main, agentCore: scripted }]"], env: { NODE_OPTIONS: `--import=${REGISTER}`, ...otel } })
  const hostLog = path.join(project.dir, "host-modules.log")
  const sendLog = path.join(project.dir, "send-modules.log")
  const host = await project.start({ PYNCHY_TEST_MODULE_LOG: hostLog })
  try {
    const sent = await project.cli(["send", "-c", "cli:x", "hello"], { env: { PYNCHY_TEST_MODULE_LOG: sendLog } })
    assert.strictEqual(sent.code, 0, sent.stderr)
    await waitFor("the scripted answer's delivery", () => project.query("SELECT 1 FROM deliveries WHERE conversation_id = 'cli:x' AND status = 'sent'")[0])
  } finally {
    await stopHost(host)
  }
  const [message] = project.query("SELECT trace_parent AS traceParent FROM messages WHERE conversation_id = 'cli:x' AND direction = 'in'")
  const read = (f: string) => fs.readFileSync(f, "utf8").split("\n").filter((l) => l !== "")
  return { host: read(hostLog), send: read(sendLog), traceParent: message?.traceParent as string | null }
}

describe("OpenTelemetry in the built CLI (real processes)", () => {
  it("with OTEL_EXPORTER_OTLP_ENDPOINT unset, no OpenTelemetry module is loaded by start or send", { timeout: 120_000 }, async () => {
    const loaded = await roundTrip({})
    // The hook saw the processes' modules (the entry point, the native driver the bundle requires)...
    assert.isTrue(loaded.host.some((u) => u.endsWith("/bin/pynchy.js")), "the host's module log holds its entry point")
    assert.isTrue(loaded.host.some((u) => u.includes("better-sqlite3")))
    assert.isTrue(loaded.send.some((u) => u.endsWith("/bin/pynchy.js")))
    // ...and none of OpenTelemetry's.
    assert.deepStrictEqual(loaded.host.filter((u) => u.includes("opentelemetry")), [])
    assert.deepStrictEqual(loaded.send.filter((u) => u.includes("opentelemetry")), [])
    // The trace context is kept all the same (Effect's own tracer): a later export can continue it.
    assert.match(loaded.traceParent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
  })

  it("with it set, both processes load the exporters and the message and its turn arrive as one trace", { timeout: 120_000 }, async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const receiver: OtlpReceiver = await Effect.runPromise(Scope.extend(otlpReceiver, scope))
      const loaded = await roundTrip({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: "pynchy-process" })
      assert.isTrue(loaded.host.some((u) => u.includes("@opentelemetry/exporter-trace-otlp-http")))
      assert.isTrue(loaded.send.some((u) => u.includes("@opentelemetry/exporter-trace-otlp-http")))
      const traceId = /^00-([0-9a-f]{32})-/.exec(loaded.traceParent ?? "")?.[1]
      const trace = receiver.spans.filter((s) => s.traceId === traceId)
      const ingest = trace.find((s) => s.name === "Ingest.ingest")
      const run = trace.find((s) => s.name === "TurnRunner.run")
      assert.isDefined(ingest, `the send process exported its ingest span: ${receiver.spans.map((s) => s.name).join(", ")}`)
      assert.isDefined(run, "the host exported the turn's span")
      assert.strictEqual(run!.parentSpanId, ingest!.spanId)
      assert.isTrue(trace.some((s) => s.name === "SandboxExecutor.execute" && s.parentSpanId === run!.spanId))
      assert.isTrue(trace.every((s) => s.service === "pynchy-process"))
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
