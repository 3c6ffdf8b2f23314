import type { RuntimeHealth } from "../../runtimes/ConnectionRuntimes.js"
import { type Html, html, time } from "../html.js"

export const runtimesBody = (runtimes: ReadonlyArray<RuntimeHealth>, channels: ReadonlyArray<string>): Html => html`<h1>Runtimes</h1>
<h2>Connection runtimes</h2>
${runtimes.length === 0 ? html`<p>No connection runtime is running (a connection gets one when an enabled route uses it).</p>` : html`<table><thead><tr><th>Runtime</th><th>Plugin</th><th>Ready</th><th>Since</th></tr></thead><tbody>
${runtimes.map((r) => html`<tr><td>${r.name}</td><td>${r.plugin}</td><td class="${r.ready ? "ok" : "failed"}">${r.ready ? "ready" : "not ready"}</td><td>${time(r.since)}</td></tr>`)}
</tbody></table>`}
<h2>Channels bound</h2>
<ul>${channels.map((c) => html`<li><code>${c}</code></li>`)}</ul>`
