/** Probe scripts run as the sandbox entry: they report what they could see and do in `$PYNCHY_SESSION_DIR/probe.json`. */

/** Looks for the canary everywhere it could leak, tries the network and writes outside its folders. */
export const SECURITY_PROBE = `
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
const canary = process.env.PROBE_NEEDLE_A + process.env.PROBE_NEEDLE_B
const env = process.env
const found = []
const seen = (where, text) => { if (text.includes(canary)) found.push(where) }
for (const [k, v] of Object.entries(env)) seen("env:" + k, String(v))
for (const pid of fs.readdirSync("/proc").filter((p) => /^\\d+$/.test(p))) {
  try { seen("/proc/" + pid + "/environ", fs.readFileSync("/proc/" + pid + "/environ", "latin1")) } catch {}
  try { seen("/proc/" + pid + "/cmdline", fs.readFileSync("/proc/" + pid + "/cmdline", "latin1")) } catch {}
}
const walk = (dir, depth) => {
  if (depth > 6) return
  let entries = []
  try { entries = fs.readdirSync(dir, { withFileTypes: true }) } catch { return }
  for (const e of entries) {
    const p = path.join(dir, e.name)
    if (["/usr", "/proc", "/sys", "/dev"].includes(p)) continue
    if (e.isDirectory()) walk(p, depth + 1)
    else if (e.isFile()) { try { seen(p, fs.readFileSync(p, "latin1")) } catch {} }
  }
}
walk("/", 0)
const writes = {}
for (const target of ["/workspace/w.txt", "/session/s.txt", "/tmp/t.txt", "/usr/x.txt", "/opt/pynchy/x.txt", "/x.txt", "/skills/x.txt", "/run/x.txt", "/etc/x.txt", "/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern"]) {
  try { fs.writeFileSync(target, "x"); writes[target] = "ok" } catch (e) { writes[target] = e.code ?? "error" }
}
const connect = await new Promise((resolve) => {
  const s = net.connect(Number(env.PROBE_PORT), "127.0.0.1")
  const t = setTimeout(() => { s.destroy(); resolve("timeout") }, 3000)
  s.once("connect", () => { clearTimeout(t); s.destroy(); resolve("connected") })
  s.once("error", (e) => { clearTimeout(t); resolve(e.code ?? "error") })
})
let nestedUserns
try { (await import("node:child_process")).execFileSync("/usr/bin/unshare", ["-U", "true"], { stdio: "ignore" }); nestedUserns = "ok" } catch { nestedUserns = "refused" }
let interfaces = []
try { interfaces = fs.readFileSync("/proc/net/dev", "utf8").split("\\n").slice(2).map((l) => l.split(":")[0].trim()).filter(Boolean) } catch {}
fs.writeFileSync("/session/probe.json", JSON.stringify({ found, writes, connect, interfaces, nestedUserns, uid: process.getuid(), envKeys: Object.keys(env).sort() }))
`

/** Reports its env and folders, for the runtime contract (works in every runtime). */
export const CONTRACT_PROBE = `
import * as fs from "node:fs"
import * as path from "node:path"
const env = process.env
const session = env.PYNCHY_SESSION_DIR
const skill = fs.readFileSync(path.join(env.PYNCHY_SKILLS_DIR, "probe-skill", "SKILL.md"), "utf8")
fs.writeFileSync(path.join(env.PYNCHY_WORKSPACE_DIR, "from-sandbox.txt"), "hi")
let skillWrite
try { fs.writeFileSync(path.join(env.PYNCHY_SKILLS_DIR, "probe-skill", "x.txt"), "x"); skillWrite = "ok" } catch (e) { skillWrite = e.code }
fs.writeFileSync(path.join(session, "probe.json"), JSON.stringify({ envKeys: Object.keys(env).sort(), home: env.HOME, skill: skill.includes("probe skill"), skillWrite }))
if (env.PROBE_HANG === "1") setInterval(() => {}, 1000)
`
