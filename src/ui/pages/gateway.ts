import type { Gateway } from "../../gateway/Gateway.js"
import { type Html, html } from "../html.js"

export interface DayUsage {
  readonly day: number
  readonly deployment: string
  readonly tokens: number
  readonly calls: number
}

const DAY = 86_400_000
const COLORS = ["#3b6ea8", "#d08a2e", "#4a9a5b", "#a84a6e", "#7a62b3", "#5a8f95"]

/** Tokens per UTC day over `days` days ending today, stacked by deployment: a server-rendered SVG. */
export const spendChart = (all: ReadonlyArray<DayUsage>, today: number, days: number): Html => {
  const first = today - (days - 1) * DAY
  const rows = all.filter((r) => r.day >= first && r.day <= today)
  const deployments = [...new Set(rows.map((r) => r.deployment))].sort()
  const totals = Array.from({ length: days }, (_, i) => rows.filter((r) => r.day === first + i * DAY).reduce((n, r) => n + r.tokens, 0))
  const max = Math.max(1, ...totals)
  const W = 640, H = 200, left = 48, bottom = 24, barW = (W - left) / days
  const y = (v: number) => (H - bottom) * (1 - v / max)
  const bars = Array.from({ length: days }, (_, i) => {
    const day = first + i * DAY
    let top = 0
    return deployments.map((d, k) => {
      const tokens = rows.find((r) => r.day === day && r.deployment === d)?.tokens ?? 0
      if (tokens === 0) return ""
      const h = (H - bottom) * (tokens / max)
      const rect = html`<rect x="${(left + i * barW + 2).toFixed(1)}" y="${(y(top) - h).toFixed(1)}" width="${(barW - 4).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[k % COLORS.length]!}"><title>${new Date(day).toISOString().slice(0, 10)} ${d}: ${tokens} tokens</title></rect>`
      top += tokens
      return rect
    })
  })
  const labels = Array.from({ length: days }, (_, i) =>
    i % 2 === (days - 1) % 2 ? html`<text x="${(left + i * barW + barW / 2).toFixed(1)}" y="${H - 6}" text-anchor="middle">${new Date(first + i * DAY).toISOString().slice(5, 10)}</text>` : "")
  return html`<figure class="chart"><svg viewBox="0 0 ${W} ${H}" role="img" aria-label="Tokens per day by deployment, last ${days} days" xmlns="http://www.w3.org/2000/svg">
<line x1="${left}" y1="${H - bottom}" x2="${W}" y2="${H - bottom}" stroke="#888"/>
<text x="${left - 6}" y="12" text-anchor="end">${max}</text><text x="${left - 6}" y="${H - bottom}" text-anchor="end">0</text>
${bars}${labels}</svg>
<figcaption>${deployments.length === 0 ? "No gateway call recorded in these days." : deployments.map((d, k) => html`<span class="key"><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${COLORS[k % COLORS.length]!}"/></svg> ${d}</span> `)}</figcaption></figure>`
}

export const gatewayBody = (status: Gateway.Status, rows: ReadonlyArray<DayUsage>, today: number): Html => html`<h1>Gateway</h1>
<h2>Spend per day (tokens)</h2>
${spendChart(rows, today, 14)}
<h2>Deployments</h2>
${status.deployments.length === 0 ? html`<p>No deployment configured (providers: in pynchy.yaml).</p>` : html`<table><thead><tr><th>Deployment</th><th>Provider</th><th>Model</th><th>In flight</th><th>Requests</th><th>Failures</th><th>Latency (EWMA)</th><th>Cooldown</th></tr></thead><tbody>
${status.deployments.map((d) => html`<tr><td>${d.id}</td><td>${d.provider}</td><td>${d.model}</td><td>${d.inFlight}</td><td>${d.requests}</td><td>${d.failures}</td>
<td>${d.latencyEwmaMs === null ? "—" : `${Math.round(d.latencyEwmaMs)} ms`}</td><td>${d.cooldownUntil === null ? "—" : `${d.cooldownReason ?? ""} until ${new Date(d.cooldownUntil).toISOString()}`}</td></tr>`)}
</tbody></table>`}
<h2>Workspaces today</h2>
<table><thead><tr><th>Workspace</th><th>Used</th><th>Reserved</th><th>Daily limit</th></tr></thead><tbody>
${Object.entries(status.usageToday).map(([w, u]) => html`<tr><td>${w}</td><td>${u.used}</td><td>${u.reserved}</td><td>${u.limit ?? "—"}</td></tr>`)}
</tbody></table>`
