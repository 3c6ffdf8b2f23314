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

/**
 * A hostile agent against the bwrap walls: leaves setuid/setgid copies of bash in /workspace,
 * tries the syscalls the seccomp filter denies (through perl's `syscall`), reads the kernel's key
 * list, pid 1's environment and its own seccomp status, and checks node still works (fs through
 * the thread pool, a child node).
 */
export const WALLS_PROBE = `
import * as fs from "node:fs"
import { execFileSync } from "node:child_process"
const out = {}
fs.copyFileSync("/usr/bin/bash", "/workspace/suid-bash")
fs.chmodSync("/workspace/suid-bash", 0o4755)
fs.copyFileSync("/usr/bin/bash", "/workspace/sgid-bash")
fs.chmodSync("/workspace/sgid-bash", 0o2755)
const nr = process.arch === "arm64"
  ? { keyctl: 219, add_key: 217, request_key: 218, perf: 241, bpf: 280, uffd: 282, personality: 92 }
  : { keyctl: 250, add_key: 248, request_key: 249, perf: 298, bpf: 321, uffd: 323, personality: 135 }
const perl = (code) => {
  try { return execFileSync("/usr/bin/perl", ["-e", code], { encoding: "utf8" }).trim() } catch (e) { return "died:" + (e.signal ?? e.status) }
}
const report = 'print $r == -1 ? "errno:" . ($! + 0) : "ok"'
const sys = (n, args) => perl("my @a = (" + args + "); my $r = syscall(" + n + ", @a); " + report)
out.sys = {
  keyctl: sys(nr.keyctl, "0, -3, 0"),
  keyctlRead: sys(nr.keyctl, "11, " + Number(process.env.PROBE_KEY_ID ?? 0) + ", 0, 0"),
  add_key: sys(nr.add_key, '"user", "pynchy-probe", "v", 1, -3'),
  request_key: sys(nr.request_key, '"user", "pynchy-probe", 0, 0'),
  perf_event_open: sys(nr.perf, "0, 0, -1, -1, 0"),
  bpf: sys(nr.bpf, "0, 0, 0"),
  userfaultfd: sys(nr.uffd, "1"),
  personalitySet: sys(nr.personality, "0x0040000"),
  personalityQuery: sys(nr.personality, "0xffffffff"),
  io_uring_setup: perl('my $p = "\\\\0" x 120; my $r = syscall(425, 8, $p); ' + report),
  io_uring_enter: sys(426, "0, 0, 0, 0, 0, 0"),
  io_uring_register: sys(427, "0, 0, 0, 0"),
  netlink: perl('print socket(my $s, 16, 3, 0) ? "ok" : "errno:" . ($! + 0)'),
  vsock: perl('print socket(my $s, 40, 1, 0) ? "ok" : "errno:" . ($! + 0)'),
  unix: perl('print socket(my $s, 1, 1, 0) ? "ok" : "errno:" . ($! + 0)'),
  ...(process.arch === "x64" ? { x32: sys(0x40000000 + 39, "") } : {})
}
out.seccomp = (fs.readFileSync("/proc/self/status", "utf8").match(/^Seccomp:\\s*(\\d+)/m) ?? [])[1]
out.keys = fs.readFileSync("/proc/keys", "utf8")
try { out.keyctlTool = execFileSync("/usr/bin/keyctl", ["print", String(process.env.PROBE_KEY_ID ?? 0)], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }) } catch (e) { out.keyctlTool = "failed" }
try { out.pid1Environ = fs.readFileSync("/proc/1/environ", "latin1").split("\\0").filter(Boolean) } catch (e) { out.pid1Environ = e.code }
out.nodeChild = execFileSync(process.execPath, ["-e", "const fs = require('fs'); fs.writeFileSync('/tmp/n.txt', 'node-ok'); fs.promises.readFile('/tmp/n.txt', 'utf8').then((t) => { require('crypto').randomBytes(8); process.stdout.write(t) })"], { encoding: "utf8" })
out.asyncRead = await fs.promises.readFile("/proc/self/status", "utf8").then(() => "ok", (e) => e.code)
out.uid = process.getuid()
fs.writeFileSync("/session/probe.json", JSON.stringify(out))
if (process.env.PROBE_HANG === "1") setInterval(() => {}, 1000)
`

/**
 * The turn-token hunt (issue 34 item 1), run by a `bash` tool call during a turn: scans the memory
 * (every readable mapping), environment and open descriptors of every process it can see for
 * gateway-token-shaped strings, and tries each on the gateway socket. A decoy process of its own
 * holds a token-shaped string in its heap, so a scan that finds nothing proves a wall, not a
 * broken scanner. Prints one JSON line.
 */
export const TOKEN_HUNT = `
import * as fs from "node:fs"
import * as http from "node:http"
import { spawn } from "node:child_process"
const decoyToken = "pgw_" + "D".repeat(43)
// The decoy keeps a flat copy in its heap (a Buffer), never on its command line.
const decoy = spawn(process.execPath, ["-e", "globalThis.k = Buffer.from('pgw_' + 'D'.repeat(43)); process.stdout.write('up'); setInterval(() => {}, 1000)"], { stdio: ["ignore", "pipe", "ignore"] })
await new Promise((resolve) => decoy.stdout.once("data", resolve))
const found = new Map()
const PREFIX = Buffer.from("pgw_")
const note = (where, buf) => {
  for (let at = buf.indexOf(PREFIX); at >= 0; at = buf.indexOf(PREFIX, at + 1)) {
    const m = /^pgw_[A-Za-z0-9_-]{43}/.exec(buf.subarray(at, at + 47).toString("latin1"))
    if (m === null) continue
    if (!found.has(m[0])) found.set(m[0], new Set())
    found.get(m[0]).add(where)
  }
}
const access = {}
const self = String(process.pid)
for (const pid of fs.readdirSync("/proc").filter((p) => /^\\d+$/.test(p) && p !== self)) {
  const a = (access[pid] = { comm: "", environ: "denied", mem: "denied", fd: "denied" })
  try { a.comm = fs.readFileSync("/proc/" + pid + "/comm", "utf8").trim() } catch {}
  try { note("environ:" + pid, fs.readFileSync("/proc/" + pid + "/environ")); a.environ = "read" } catch (e) { a.environ = e.code }
  try {
    const maps = fs.readFileSync("/proc/" + pid + "/maps", "utf8")
    const mem = fs.openSync("/proc/" + pid + "/mem", "r")
    a.mem = "opened"
    let bytes = 0
    for (const line of maps.split("\\n")) {
      // Where a process keeps what it learnt: writable or anonymous mappings (not the text of its binaries).
      const m = /^([0-9a-f]+)-([0-9a-f]+) r(.)\\S* \\S+ \\S+ \\S+ *(.*)$/.exec(line)
      if (m === null || (m[3] !== "w" && m[4] !== "")) continue
      const start = parseInt(m[1], 16), end = parseInt(m[2], 16)
      for (let at = start; at < end; at += 8 << 20) {
        const buf = Buffer.allocUnsafe(Math.min(8 << 20, end - at) + 64)
        let n = 0
        // Reads 64 bytes past the chunk (within the mapping), so a token across two chunks is seen whole.
        try { n = fs.readSync(mem, buf, 0, Math.min(buf.length, end - at), at) } catch { break }
        bytes += n
        note("mem:" + pid, buf.subarray(0, n))
      }
    }
    fs.closeSync(mem)
    if (bytes > 0) a.mem = "read"
  } catch (e) { if (a.mem === "denied") a.mem = e.code }
  try {
    const fds = fs.readdirSync("/proc/" + pid + "/fd")
    a.fd = "listed"
    for (const fd of fds) {
      try {
        // Regular files only: reading a pipe would steal another process's bytes (libuv's signal
        // pipe: its child exits would go unseen), and a reopened eventfd may block whatever the flags.
        if (!fs.readlinkSync("/proc/" + pid + "/fd/" + fd).startsWith("/")) continue
        const h = fs.openSync("/proc/" + pid + "/fd/" + fd, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
        if (!fs.fstatSync(h).isFile()) { fs.closeSync(h); continue }
        const buf = Buffer.alloc(1 << 20)
        let n = 0
        try { n = fs.readSync(h, buf, 0, buf.length, 0) } catch {}
        fs.closeSync(h)
        note("fd:" + pid + "/" + fd, buf.subarray(0, n))
      } catch {}
    }
  } catch (e) { a.fd = e.code }
}
decoy.kill("SIGKILL")
// The runner: this process's ancestor whose parent is pid 1 (bwrap's init).
const parentOf = (pid) => { try { return Number(fs.readFileSync("/proc/" + pid + "/stat", "utf8").split(") ")[1].split(" ")[1]) } catch { return 0 } }
let runnerPid = process.pid
while (parentOf(runnerPid) > 1) runnerPid = parentOf(runnerPid)
const tryToken = (token) => new Promise((resolve) => {
  const req = http.request({ socketPath: process.env.PYNCHY_GATEWAY_SOCKET, path: "/v1/models", method: "GET", headers: { authorization: "Bearer " + token } }, (res) => { res.resume(); res.on("end", () => resolve(res.statusCode)) })
  req.on("error", (e) => resolve(e.code))
  req.end()
})
const candidates = []
for (const [token, where] of found) candidates.push({ decoy: token === decoyToken, where: [...where].sort(), status: await tryToken(token) })
// Exits at once: handles it reopened through /proc may keep the event loop waiting.
process.stdout.write(JSON.stringify({ decoyPid: decoy.pid, runnerPid, access, candidates }) + "\\n", () => process.exit(0))
`
