import type { Conversation } from "../../domain/workspace.js"
import type { Message } from "../../domain/message.js"
import type { Turn } from "../../domain/turn.js"
import { type Html, html, time } from "../html.js"
import type { MessageTrace } from "../trace.js"

export const conversationsBody = (rows: ReadonlyArray<Conversation>): Html => html`<h1>Conversations</h1>
${rows.length === 0 ? html`<p>No conversation yet.</p>` : html`<table><thead><tr><th>Conversation</th><th>Workspace</th><th>Started</th></tr></thead><tbody>
${rows.map((c) => html`<tr><td><a href="/conversations/${encodeURIComponent(c.id)}">${c.id}</a></td><td>${c.workspace}</td><td>${time(c.createdAt)}</td></tr>`)}
</tbody></table>`}`

export const conversationBody = (conversation: Conversation, messages: ReadonlyArray<Message>, turns: ReadonlyArray<Turn>): Html => html`<h1>${conversation.id}</h1>
<p>Workspace <code>${conversation.workspace}</code>, connection <code>${conversation.connection}</code>, place <code>${conversation.place}</code>.</p>
<h2>Turns</h2>
${turns.length === 0 ? html`<p>No turn yet.</p>` : html`<table><thead><tr><th>Turn</th><th>Status</th><th>Attempts</th><th>Error</th><th>Started</th><th>Updated</th></tr></thead><tbody>
${turns.map((t) => html`<tr><td>${t.id}</td><td class="status-${t.status}">${t.status}</td><td>${t.attempts}</td><td>${t.error ?? ""}</td><td>${time(t.createdAt)}</td><td>${time(t.updatedAt)}</td></tr>`)}
</tbody></table>`}
<h2>Messages</h2>
<table><thead><tr><th>Id</th><th>When</th><th>From</th><th>Text</th><th>Turn</th><th></th></tr></thead><tbody>
${messages.map((m) => html`<tr><td>${m.id}</td><td>${time(m.createdAt)}</td><td>${m.direction === "in" ? m.sender : "→ " + m.sender}</td><td class="text">${m.text}</td>
<td>${m.handledBy ?? ""}</td><td>${m.direction === "in" ? html`<a href="/messages/${m.id}">trace</a>` : ""}</td></tr>`)}
</tbody></table>`

export const traceBody = (t: MessageTrace): Html => html`<h1>Trace of message ${t.message.id}</h1>
<p class="verdict verdict-${t.verdict.code}" role="status"><strong>Verdict:</strong> ${t.verdict.text} <code>${t.verdict.code}</code></p>
<p>In <a href="/conversations/${encodeURIComponent(t.message.conversationId)}">${t.message.conversationId}</a> from ${t.message.sender}: <span class="text">${t.message.text}</span></p>
<ol class="trace">${t.steps.map((s) => html`<li class="step ${s.outcome}"><span class="at">${time(s.at)}</span> <strong>${s.what}</strong> ${s.detail}</li>`)}</ol>`
