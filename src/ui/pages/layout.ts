import { type Html, html } from "../html.js"

export const NAV = [
  ["/chat", "Chat"],
  ["/conversations", "Conversations"],
  ["/approvals", "Approvals"],
  ["/runtimes", "Runtimes"],
  ["/gateway", "Gateway"],
  ["/schedules", "Schedules"]
] as const

export interface PageOptions {
  readonly title: string
  /** The signed-in user (absent on the login page). */
  readonly user?: { readonly name: string; readonly csrf: string }
  /** The nav entry to mark. */
  readonly current?: string
  /** Re-render `main` when a host event arrives (the live stream). */
  readonly live?: boolean
}

/** The page around `body`: one stylesheet and one script, both served by the host; no inline script or style. */
export const page = (options: PageOptions, body: Html): string =>
  "<!doctype html>" + html`<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.user ? html`<meta name="csrf" content="${options.user.csrf}">` : ""}
<title>${options.title} &middot; Pynchy</title>
<link rel="stylesheet" href="/assets/ui.css">
<script src="/assets/ui.js" defer></script>
</head><body${options.live ? html` data-live="/live"` : ""}>
<header><span class="brand">Pynchy</span>
${options.user
  ? html`<nav>${NAV.map(([href, label]) => html`<a href="${href}"${options.current === href ? html` aria-current="page"` : ""}>${label}</a>`)}</nav>
<form method="post" action="/logout" class="logout"><input type="hidden" name="csrf" value="${options.user.csrf}"><span class="user">${options.user.name}</span> <button type="submit">Log out</button></form>`
  : ""}
</header>
<main>${body}</main>
</body></html>`.value

/** A hidden CSRF field for a form. */
export const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`
