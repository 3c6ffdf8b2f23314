import type { Approval } from "../../actions/ApprovalStore.js"
import { type Html, html, time } from "../html.js"
import { csrfField } from "./layout.js"

export const approvalsBody = (rows: ReadonlyArray<Approval>, csrf: string, now: number, notice?: string): Html => html`<h1>Approvals</h1>
${notice !== undefined ? html`<p class="notice" role="status">${notice}</p>` : ""}
${rows.length === 0 ? html`<p>No approval has been asked for.</p>` : html`<table><thead><tr><th>Code</th><th>Action</th><th>Conversation</th><th>Asked</th><th>Status</th><th></th></tr></thead><tbody>
${rows.map((a) => {
  const open = a.status === "pending" && a.expiresAt > now
  return html`<tr id="approval-${a.id}"><td><code>${a.id}</code></td><td>${a.action}</td><td><a href="/conversations/${encodeURIComponent(a.conversationId)}">${a.conversationId}</a></td>
<td>${time(a.createdAt)}</td><td class="status-${a.status}">${open ? `pending (until ${time(a.expiresAt)})` : a.status}${a.decidedBy !== null ? ` by ${a.decidedBy}` : ""}</td>
<td>${open ? html`<form method="post" action="/approvals/${a.id}" class="inline">${csrfField(csrf)}
<button name="decision" value="approve" type="submit">Approve</button> <button name="decision" value="deny" type="submit">Deny</button></form>` : ""}</td></tr>`
})}</tbody></table>`}`
