/**
 * The Control UI in real headless Chromium (Debian's, driven by playwright-core) against the real
 * host: the built bin (`pynchy start`) with its SQLite database, the agent in a process sandbox
 * with the scripted core, and a plugin whose one host action is high risk. The test logs in,
 * chats (the reply streams in), approves the approval the agent asks for, reads a trace, and
 * checks the walls: no page without a login, no POST without the CSRF token or from another
 * origin, and the Content-Security-Policy. A screenshot of each page goes to test-artifacts/ui/.
 */
import { afterAll, assert, describe, it } from "vitest"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { hashToken } from "../../src/config/token-hashes.js"
import { userOf } from "../../src/ui/auth.js"
import { CSP } from "../../src/ui/ControlUi.js"
import { killAllHosts, query, startHost, stopHost } from "../channels/host-process.js"
import { tempDir } from "../support/db.js"
import { approvalProbePlugin } from "../support/approval-probe.js"
import { freePort } from "../support/synapse.js"
import { skipWithout } from "../support/system.js"

const CHROMIUM = "/usr/bin/chromium"
const TOKEN = "correct horse battery staple"
const ARTIFACTS = path.resolve(import.meta.dirname, "../../test-artifacts/ui")
const WAIT = 60_000

const missing = skipWithout("chromium", "apt-get install chromium (Debian's; playwright-core drives it, no browser download)")


const shot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true })

let browser: Browser | undefined
afterAll(async () => {
  await browser?.close()
  killAllHosts()
})

describe.skipIf(missing)("Control UI in headless Chromium (real host, real SQLite, process sandbox)", () => {
  it("logs in, chats with a streamed reply, approves an approval, shows a trace; refuses what it must", { timeout: 240_000 }, async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true })
    const dir = tempDir()
    const marker = path.join(dir, "dropped")
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    fs.writeFileSync(path.join(dir, "probe.mjs"), approvalProbePlugin(marker))
    // No routes: the defaults route the UI's connection (`ui`, every place) to `main`.
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${JSON.stringify(path.join(dir, "data"))}`,
      "containerRuntime: process",
      "workspaces: [{ id: main, agentCore: scripted, actions: [test.drop] }]",
      `plugins: { modules: [${JSON.stringify(path.join(dir, "probe.mjs"))}] }`,
      `ui: { port: ${port}, tokens: ['${hashToken(TOKEN)}'] }`
    ].join("\n") + "\n")
    const db = path.join(dir, "data", "pynchy.db")
    const host = await startHost(dir)
    try {
      // No page without a login: every page answers with the way to the login page.
      for (const p of ["/chat", "/chat/main", "/conversations", "/approvals", "/runtimes", "/gateway", "/schedules", "/messages/1"]) {
        const res = await fetch(base + p, { redirect: "manual" })
        assert.deepStrictEqual([res.status, res.headers.get("location")], [303, "/login"], p)
      }
      for (const p of ["/live", "/chat/main/stream"]) assert.strictEqual((await fetch(base + p, { redirect: "manual" })).status, 401, p)
      const anonymous = await fetch(`${base}/chat/main/messages`, { method: "POST", headers: { origin: base, "content-type": "application/x-www-form-urlencoded" }, body: "text=hi" })
      assert.strictEqual(anonymous.status, 401)
      // A wrong token logs nobody in.
      const wrong = await fetch(`${base}/login`, { method: "POST", redirect: "manual", headers: { origin: base, "content-type": "application/x-www-form-urlencoded" }, body: "token=guess" })
      assert.strictEqual(wrong.status, 401)
      assert.isNull(wrong.headers.get("set-cookie"))
      // Another host name (a DNS-rebinding page) is refused.
      const rebound = await new Promise<number | undefined>((resolve, reject) =>
        http.get({ host: "127.0.0.1", port, path: "/login", headers: { host: `evil.example:${port}` } }, (res) => {
          res.resume()
          resolve(res.statusCode)
        }).once("error", reject))
      assert.strictEqual(rebound, 421)

      browser = await chromium.launch({ executablePath: CHROMIUM })
      const context = await browser.newContext({ viewport: { width: 1100, height: 760 } })
      const page = await context.newPage()
      const blocked: Array<string> = []
      page.on("console", (m) => {
        if (/Content Security Policy/i.test(m.text())) blocked.push(m.text())
      })

      const login = await page.goto(`${base}/chat`)
      assert.strictEqual(new URL(page.url()).pathname, "/login")
      assert.strictEqual(login?.headers()["content-security-policy"], CSP)
      await shot(page, "login")
      await page.fill("#token", TOKEN)
      await Promise.all([page.waitForURL(`${base}/chat/main`), page.click("button[type=submit]")])
      const cookie = (await context.cookies()).find((c) => c.name === "pynchy_ui")
      assert.deepInclude(cookie, { httpOnly: true, sameSite: "Strict" })
      assert.notInclude(page.url(), TOKEN)

      // Chat: the reply streams in (a delta shows before the reply replaces it).
      // Runs in the page (the DevTools protocol, not a script the CSP would judge).
      await page.evaluate(`window.sawStreaming = false;
        new MutationObserver(() => { if (document.querySelector("#chat li.streaming")) window.sawStreaming = true })
          .observe(document.getElementById("chat"), { subtree: true, childList: true, attributes: true, characterData: true })`)
      // The core streams its text, then holds the reply until the test has seen it (`!hold`).
      await page.fill("#send textarea", "!hold streamed hello from the browser")
      await page.click("#send button[type=submit]")
      await page.waitForSelector("#chat li.streaming >> text=echo: hello from the browser", { timeout: WAIT })
      fs.writeFileSync(path.join(dir, "data", "workspaces", "main", "streamed"), "")
      await page.waitForSelector("#chat li.assistant.done >> text=echo: hello from the browser", { timeout: WAIT })
      assert.isTrue(await page.evaluate("window.sawStreaming"), "the streamed text was shown before the reply")
      assert.strictEqual(await page.locator("#chat li.you .text").first().textContent(), "!hold streamed hello from the browser")
      await shot(page, "chat")

      // Live updates: a second tab on the approvals page, re-rendered from the event bus (no reload).
      const watcher = await context.newPage()
      await watcher.goto(`${base}/approvals`)
      await watcher.evaluate("window.notReloaded = true")

      // An approval: the agent asks to run a high-risk action; the notice arrives in the chat.
      await page.fill("#send textarea", "!tool test.drop {\"table\":\"t\"}")
      await page.click("#send button[type=submit]")
      const notice = await page.waitForSelector("#chat li.notice >> text=Approval needed", { timeout: WAIT })
      const code = /approve ([a-z0-9]{6})/.exec((await notice.textContent()) ?? "")?.[1]
      assert.isDefined(code)
      assert.isFalse(fs.existsSync(marker))
      await watcher.waitForSelector(`#approval-${code} button[value=approve]`, { timeout: WAIT })
      assert.isTrue(await watcher.evaluate("window.notReloaded === true"), "the page was updated in place")
      await watcher.close()

      await page.goto(`${base}/approvals`)
      await shot(page, "approvals")
      // The CSRF wall: the same POST without the session's token (or from another origin) is refused.
      const noCsrf = await page.request.post(`${base}/approvals/${code}`, { form: { decision: "approve" }, headers: { origin: base } })
      assert.strictEqual(noCsrf.status(), 403)
      const csrf = await page.getAttribute("meta[name=csrf]", "content")
      const foreign = await page.request.post(`${base}/approvals/${code}`, { form: { decision: "approve", csrf: csrf! }, headers: { origin: "http://evil.example" } })
      assert.strictEqual(foreign.status(), 403)
      assert.strictEqual(query(db, "SELECT status FROM approvals WHERE id = ?", code)[0]?.status, "pending")

      await Promise.all([page.waitForURL(/\/approvals\?decided=/), page.click(`#approval-${code} button[value=approve]`)])
      await page.waitForSelector(`text=${code} approved`)
      const [row] = query(db, "SELECT status, decided_by AS decidedBy FROM approvals WHERE id = ?", code)
      assert.strictEqual(row?.decidedBy, userOf(hashToken(TOKEN)))
      await shot(page, "approvals-decided")

      // The host's waiter was woken: the action ran and the agent's answer reaches the chat.
      await page.goto(`${base}/chat/main`)
      await page.waitForSelector("#chat li.assistant >> text=tool ok: \"dropped\"", { timeout: WAIT })
      assert.strictEqual(fs.readFileSync(marker, "utf8"), "ran")

      // Conversations, turns and the trace of the first message.
      await page.goto(`${base}/conversations`)
      await shot(page, "conversations")
      await page.click("a >> text=ui:main")
      await page.waitForSelector("h2 >> text=Turns")
      await shot(page, "conversation")
      const [first] = query(db, "SELECT id FROM messages WHERE conversation_id = 'ui:main' AND text = '!hold streamed hello from the browser'")
      await page.click(`a[href="/messages/${first!.id}"]`)
      await page.waitForSelector(".verdict")
      assert.strictEqual(await page.textContent(".verdict code"), "answered")
      assert.isAbove(await page.locator(".trace li").count(), 2)
      await shot(page, "trace")

      for (const [name, heading] of [["runtimes", "Channels bound"], ["gateway", "Spend per day"], ["schedules", "Schedules and tasks"]] as const) {
        const res = await page.goto(`${base}/${name}`)
        assert.strictEqual(res?.status(), 200, name)
        assert.include(await page.textContent("main"), heading)
        await shot(page, name)
      }

      // Logging out ends the session: the cookie no longer opens a page.
      await Promise.all([page.waitForURL(`${base}/login`), page.click("form.logout button")])
      await page.goto(`${base}/approvals`)
      assert.strictEqual(new URL(page.url()).pathname, "/login")
      assert.deepStrictEqual(blocked, [], "no resource was blocked by the CSP")
    } finally {
      await stopHost(host)
    }
  })
})
