/**
 * The built-in tunnel detectors. Tailscale: `tailscale status --json` (this machine's MagicDNS
 * name while the backend runs). cloudflared: a running `cloudflared` with its metrics server on
 * one of its default ports (20241-20245); a quick tunnel's hostname comes from `/quicktunnel`.
 * Each is absent, and says why, where its tool is not installed or not running. Nothing here
 * installs or starts anything.
 */
import { execFile } from "node:child_process"
import { definePlugin, type Tunnel } from "../contracts/plugin.js"

interface Detected {
  readonly present: boolean
  readonly url?: string
  readonly detail: string
}

const run = (cmd: string, args: ReadonlyArray<string>): Promise<{ readonly missing: boolean; readonly stdout: string; readonly failed: boolean }> =>
  new Promise((resolve) =>
    execFile(cmd, [...args], { timeout: 4_000, encoding: "utf8", maxBuffer: 4 * 1024 * 1024 }, (error, stdout) =>
      resolve({ missing: (error as NodeJS.ErrnoException | null)?.code === "ENOENT", failed: error !== null, stdout })))

export const tailscale: Tunnel = {
  name: "tailscale",
  detect: async (): Promise<Detected> => {
    const r = await run("tailscale", ["status", "--json"])
    if (r.missing) return { present: false, detail: "tailscale is not installed" }
    let status: { BackendState?: unknown; Self?: { DNSName?: unknown } }
    try {
      status = JSON.parse(r.stdout)
    } catch {
      return { present: false, detail: r.failed ? "tailscale is installed but its daemon does not answer" : "tailscale status --json was not JSON" }
    }
    if (status.BackendState !== "Running") return { present: false, detail: `tailscale is ${typeof status.BackendState === "string" ? status.BackendState : "not running"}` }
    const dns = typeof status.Self?.DNSName === "string" ? status.Self.DNSName.replace(/\.$/, "") : ""
    return dns === "" ? { present: true, detail: "tailscale is running (no MagicDNS name)" } : { present: true, url: `https://${dns}`, detail: `tailscale is running as ${dns}` }
  }
}

const METRICS_PORTS = [20241, 20242, 20243, 20244, 20245]

const getJson = async (url: string): Promise<unknown> => {
  const res = await fetch(url, { signal: AbortSignal.timeout(1_000) })
  if (!res.ok) throw new Error(`HTTP ${res.status}`)
  return res.json()
}

export const cloudflared: Tunnel = {
  name: "cloudflared",
  detect: async (): Promise<Detected> => {
    const r = await run("cloudflared", ["--version"])
    if (r.missing) return { present: false, detail: "cloudflared is not installed" }
    for (const port of METRICS_PORTS) {
      const base = `http://127.0.0.1:${port}`
      const quick = await getJson(`${base}/quicktunnel`).then((j) => (j as { hostname?: unknown }).hostname, () => undefined)
      if (typeof quick === "string" && quick !== "") return { present: true, url: `https://${quick}`, detail: `cloudflared quick tunnel (metrics on ${base})` }
      const metrics = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(1_000) }).then((res) => res.ok, () => false)
      if (metrics) return { present: true, detail: `cloudflared is running (metrics on ${base}); a named tunnel's hostname is in its own config` }
    }
    return { present: false, detail: "cloudflared is installed but no running cloudflared serves metrics on 127.0.0.1:20241-20245" }
  }
}

export default definePlugin({
  name: "tunnels",
  description: "Detects Tailscale and cloudflared (never installs or starts them).",
  tunnel: () => [tailscale, cloudflared]
})
