/**
 * The Control UI's pure parts: every interpolated value is escaped (a message can never become
 * markup), the spend chart stacks each day's tokens by deployment, and the login rules (loopback
 * Host names, same Origin, sessions that expire).
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import { loopbackHost, sameOrigin, Sessions, userOf } from "../../src/ui/auth.js"
import { html } from "../../src/ui/html.js"
import { spendChart } from "../../src/ui/pages/gateway.js"

const DAY = 86_400_000

describe("Control UI pages", () => {
  it("escapes every interpolated value, and only values", () => {
    const text = `<script>alert("x")</script> & 'q'`
    assert.strictEqual(html`<p title="${text}">${text}</p>`.value,
      "<p title=\"&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;\">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;</p>")
    assert.strictEqual(html`<ul>${["a<", html`<b>b</b>`]}</ul>`.value, "<ul>a&lt;<b>b</b></ul>")
  })

  it("the spend chart: one bar segment per (day, deployment) with tokens, heights in proportion, days outside the window left out", () => {
    const today = 20 * DAY
    const chart = spendChart([
      { day: today, deployment: "openai/gpt", tokens: 300, calls: 3 },
      { day: today, deployment: "local/tiny", tokens: 100, calls: 1 },
      { day: today - DAY, deployment: "openai/gpt", tokens: 200, calls: 2 },
      { day: today - 30 * DAY, deployment: "old", tokens: 999, calls: 1 }
    ], today, 14).value
    const rects = [...chart.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"[^>]*><title>([^<]+)<\/title>/g)].map((m) => [Number(m[1]), m[2]])
    assert.deepStrictEqual(rects.map((r) => r[1]), [
      `${new Date(today - DAY).toISOString().slice(0, 10)} openai/gpt: 200 tokens`,
      `${new Date(today).toISOString().slice(0, 10)} local/tiny: 100 tokens`,
      `${new Date(today).toISOString().slice(0, 10)} openai/gpt: 300 tokens`
    ])
    const [yesterday, tiny, gpt] = rects.map((r) => r[0] as number)
    // The tallest day (400 tokens) fills the plot; its two segments stack to it.
    assert.closeTo(tiny! + gpt!, 176, 0.2)
    assert.closeTo(yesterday!, 88, 0.2)
    assert.include(chart, "400")
    assert.notInclude(chart, "old")
  })

  it("Host must be a loopback name with this port; Origin must be this server", () => {
    assert.isTrue(loopbackHost("127.0.0.1:4180", 4180))
    assert.isTrue(loopbackHost("localhost:4180", 4180))
    assert.isTrue(loopbackHost("[::1]:4180", 4180))
    assert.isFalse(loopbackHost("evil.example:4180", 4180))
    assert.isFalse(loopbackHost("127.0.0.1:80", 4180))
    assert.isFalse(loopbackHost(undefined, 4180))
    assert.isTrue(sameOrigin("http://127.0.0.1:4180", "127.0.0.1:4180"))
    assert.isFalse(sameOrigin("null", "127.0.0.1:4180"))
    assert.isFalse(sameOrigin("http://evil.example", "127.0.0.1:4180"))
    assert.isFalse(sameOrigin(undefined, "127.0.0.1:4180"))
  })

  it("a session lasts its time without use, each use extends it, and the user name never shows the digest", () => {
    const sessions = new Sessions(1_000)
    const s = sessions.create("ab".repeat(32), 0)
    assert.notStrictEqual(s.id, s.csrf)
    assert.isTrue(Option.isSome(sessions.get(s.id, 900)))
    assert.isTrue(Option.isSome(sessions.get(s.id, 1_800)))
    assert.isTrue(Option.isNone(sessions.get(s.id, 2_800)))
    assert.isTrue(Option.isNone(sessions.get("forged", 0)))
    assert.match(userOf("ab".repeat(32)), /^ui:[0-9a-f]{8}$/)
    assert.notInclude("ab".repeat(32), userOf("ab".repeat(32)).slice(3))
  })
})
