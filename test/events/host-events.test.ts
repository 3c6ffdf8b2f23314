/**
 * The host's events through whole turns of the real host: the built bin (`pynchy start`) on its
 * SQLite file, the agent in a process sandbox with the openai core, the gateway in front of a
 * scripted upstream, a high-risk host action, a workspace without budget and a schedule firing
 * every second. What the event log holds afterwards is what real paths published, and
 * `pynchy trace` names the two silent cases met on the way: an approval waiting and a budget
 * used up.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { hostProject, killAllHosts, stopHost } from "../channels/host-process.js"
import { chatAnswer, json, scriptedUpstream } from "../gateway/support.js"
import { approvalProbePlugin } from "../support/approval-probe.js"
import { eventually } from "../support/eventually.js"
import { sentLines } from "../support/host.js"

const KEY_ENV = "PYNCHY_EVENTS_TEST_KEY"
const BUILT = fs.existsSync(path.resolve(import.meta.dirname, "../../dist"))


const toolCall = JSON.stringify({
  id: "c1", object: "chat.completion", model: "tiny",
  choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "test__drop", arguments: "{}" } }] } }],
  usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }
})

describe.skipIf(!BUILT)("host events through whole turns of the built host", () => {
  it.scopedLive("sandbox, gateway, cooldown, approval, budget and schedule events reach the event log; trace names the waiting approval and the used-up budget", () =>
    Effect.gen(function* () {
      yield* Effect.addFinalizer(() => Effect.sync(killAllHosts))
      // A message asking to drop gets the tool call; the first one asking to wait gets a 429 with
      // Retry-After (the deployment cools down, the gateway retries it after); everything else (the
      // tool's result too) gets "hello".
      let throttled = false
      const upstream = yield* scriptedUpstream((hit, res) => {
        const last = hit.body.messages.at(-1)
        const said = last.role === "user" ? String(last.content) : ""
        if (said.includes("wait a moment") && !throttled) {
          throttled = true
          res.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(JSON.stringify({ error: { message: "slow down" } }))
          return
        }
        json(res, 200, said.includes("drop it") ? toolCall : chatAnswer("tiny"))
      })
      const project = hostProject({
        yaml: (dir) => [
          "containerRuntime: process",
          `providers: [{ name: up, kind: openai-compatible, baseUrl: ${JSON.stringify(upstream.url)}, apiKeyEnv: ${KEY_ENV}, models: [tiny] }]`,
          "gateway: { budgets: { workspaces: { broke: 1 } } }",
          `connections: { rec: { kind: recording, file: ${JSON.stringify(path.join(dir, "sent.jsonl"))}, idempotent: true } }`,
          "routes: [{ connection: rec, place: room, workspace: main }, { connection: rec, place: broke, workspace: broke }]",
          "workspaces:",
          "  - { id: main, agentCore: openai, actions: [test.drop] }",
          "  - { id: broke, agentCore: openai }",
          "  - { id: tick, agentCore: scripted, schedule: '* * * * * *', scheduledPrompt: tick, deliverTo: 'rec:ticks' }",
          `plugins: { modules: [${JSON.stringify(path.join(dir, "probe.mjs"))}] }`
        ],
        env: { [KEY_ENV]: "sk-events-test" }
      })
      const { dir } = project
      const marker = path.join(dir, "dropped")
      fs.writeFileSync(path.join(dir, "probe.mjs"), approvalProbePlugin(marker))
      const host = yield* Effect.promise(() => project.start())
      const send = (place: string, text: string) =>
        Effect.promise(() => project.cli(["send", "-c", `rec:${place}`, text])).pipe(Effect.map((r) => {
          assert.strictEqual(r.code, 0, r.stderr)
          return Number(/message (\d+) stored/.exec(r.stdout)![1])
        }))
      const traced = (id: number) =>
        Effect.promise(() => project.cli(["trace", String(id), "--json"])).pipe(Effect.map((r) =>
          r.code === 0 ? (JSON.parse(r.stdout) as { verdict: { code: string; text: string } }).verdict : undefined
        ))
      const sent = () => sentLines(dir)
      const replies = (conversation: string) => sent().filter((l) => l.conversation === conversation && l.kind === "reply")

      // An answered turn: the sandbox starts and exits, the gateway calls the upstream.
      yield* send("room", "hello there")
      yield* eventually(Effect.sync(() => (replies("rec:room").length === 1 ? true : undefined)), { label: "the first reply" })

      // A high-risk action: the turn waits for a human, and trace says how to answer.
      const asking = yield* send("room", "please drop it")
      const notice = yield* eventually(Effect.sync(() => sent().find((l) => l.conversation === "rec:room" && /approve [a-z0-9]{6}/.test(l.text))), { label: "the approval notice" })
      const waiting = yield* eventually(Effect.map(traced(asking), (v) => (v?.code === "approval_waiting" ? v : undefined)), { label: "the approval_waiting verdict" })
      const code = /approve ([a-z0-9]{6})/.exec(notice.text)![1]!
      assert.include(waiting.text, `approve ${code}`)
      yield* send("room", `approve ${code}`)
      yield* eventually(Effect.sync(() => (fs.existsSync(marker) && replies("rec:room").length === 2 ? true : undefined)), { label: "the approved action and its reply" })

      // The upstream asks the gateway to wait: the deployment cools down, and the turn is answered after.
      yield* send("room", "wait a moment please")
      yield* eventually(Effect.sync(() => (replies("rec:room").length === 3 ? true : undefined)), { label: "the reply after the cooldown" })

      // A workspace with a budget of one token: the gateway refuses, and trace says why.
      const broke = yield* send("broke", "hi")
      const budget = yield* eventually(Effect.map(traced(broke), (v) => (v?.code === "budget_exceeded" ? v : undefined)), { label: "the budget_exceeded verdict" })
      assert.include(budget.text, "budget used up")

      const expected = [
        "message.ingested", "turn.started", "turn.completed", "sandbox.started", "sandbox.exited", "gateway.call",
        "gateway.budget_exceeded", "gateway.cooldown", "approval.asked", "approval.decided", "schedule.run", "delivery.recorded", "delivery.sent"
      ]
      const types = yield* eventually(() => {
        const have = new Set(project.query("SELECT DISTINCT type FROM events").map((r) => String(r.type)))
        const missing = expected.filter((t) => !have.has(t))
        if (missing.length > 0) throw new Error(`the log has no ${missing.join(", ")} yet`)
        return have
      }, { label: "the event log holding every kind of event", timeout: "120 seconds" })
      assert.includeMembers([...types], expected)
      const [call] = project.query("SELECT payload FROM events WHERE type = 'gateway.call' LIMIT 1")
      assert.deepInclude(JSON.parse(String(call!.payload)), { workspace: "main", status: 200 })
      const [cooldown] = project.query("SELECT payload FROM events WHERE type = 'gateway.cooldown'")
      assert.deepInclude(JSON.parse(String(cooldown!.payload)), { deployment: "up/tiny", reason: "retry-after" })
      assert.isTrue(throttled)
      const [decided] = project.query("SELECT payload FROM events WHERE type = 'approval.decided'")
      assert.deepInclude(JSON.parse(String(decided!.payload)), { code, status: "approved", action: "test.drop" })
      assert.notInclude(JSON.stringify(project.query("SELECT payload FROM events")), "please drop it", "no message content in an event")
      yield* Effect.promise(() => stopHost(host))
    }), { timeout: 360_000 })
})
