import { type Html, html, time } from "../html.js"
import { csrfField } from "./layout.js"

export interface ChatLine {
  readonly at: number
  readonly who: "you" | "assistant" | "notice"
  readonly text: string
  /** A reply's key (the stream replaces its streamed text with the reply). */
  readonly key?: string
  /** An inbound message's id (its trace). */
  readonly messageId?: number
}

export interface ChatView {
  readonly place: string
  readonly csrf: string
  readonly lines: ReadonlyArray<ChatLine>
  /** The last reply id shown: the stream continues after it. */
  readonly after: number
  /** The places of the UI connection with an enabled route, or the reason there is none. */
  readonly routed: boolean
  readonly places: ReadonlyArray<string>
}

const line = (l: ChatLine): Html =>
  html`<li class="line ${l.who}"${l.key !== undefined ? html` data-key="${l.key}"` : ""}><span class="who">${l.who}</span>
<span class="text">${l.text}</span> <span class="at">${time(l.at)}${l.messageId !== undefined ? html` &middot; <a href="/messages/${l.messageId}">trace</a>` : ""}</span></li>`

export const chatBody = (v: ChatView): Html => html`<h1>Chat <small>ui:${v.place}</small></h1>
${v.routed ? "" : html`<p class="error" role="alert">No enabled route covers connection <code>ui</code>, place <code>${v.place}</code>: add
<code>- { connection: ui, place: "*", workspace: main }</code> to <code>routes:</code> in pynchy.yaml.</p>`}
<nav class="places">${v.places.map((p) => html`<a href="/chat/${encodeURIComponent(p)}"${p === v.place ? html` aria-current="page"` : ""}>${p}</a>`)}
<form method="get" action="/chat" class="inline"><input name="place" placeholder="new chat name" pattern="[A-Za-z0-9._-]{1,64}" required><button type="submit">Open</button></form></nav>
<ol id="chat" class="chat" data-stream="/chat/${encodeURIComponent(v.place)}/stream?after=${v.after}">${v.lines.map(line)}</ol>
<form id="send" method="post" action="/chat/${encodeURIComponent(v.place)}/messages" class="send">${csrfField(v.csrf)}
<input type="hidden" name="key" value="">
<textarea name="text" rows="2" required placeholder="Message"></textarea>
<button type="submit">Send</button>
<span class="status" role="status"></span>
</form>`
