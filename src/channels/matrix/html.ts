/**
 * The agent's Markdown as Matrix HTML (`format: org.matrix.custom.html`, the `formatted_body` of a
 * message; the plain `body` stays the Markdown text, for clients that show no HTML). Only the
 * tags the Matrix spec recommends clients render: code blocks, headings, bold, italic, strike,
 * inline code and links (http, https and mailto only). Everything else is escaped.
 */
import { renderMarkdown } from "../markdown.js"

const escapeHtml = (s: string): string => s.replace(/[&<>"]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : "&quot;"))

const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/
const SAFE_URL = /^(https?:|mailto:)/i

/** Inline markup of escaped text without code spans. */
const marks = (escaped: string): string =>
  escaped
    .replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (all, label: string, url: string) => (SAFE_URL.test(url) ? `<a href="${url}">${label}</a>` : all))
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/__([^_\n]+)__/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s][^*\n]*?)\*(?!\w)/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_([^_\s][^_\n]*?)_(?!\w)/g, "$1<em>$2</em>")
    .replace(/~~([^~\n]+)~~/g, "<del>$1</del>")

/** One run of prose: code spans kept literal, the rest marked up, line breaks as `<br>`. */
const inline = (text: string): string =>
  text
    .split(/(`[^`\n]+`)/)
    .map((part, i) => (i % 2 === 1 ? `<code>${escapeHtml(part.slice(1, -1))}</code>` : marks(escapeHtml(part))))
    .join("")
    .replace(/\n/g, "<br>")

export const toMatrixHtml = (markdown: string): string =>
  renderMarkdown(markdown, {
    code: (lang, body) => `<pre><code${lang !== "" ? ` class="language-${escapeHtml(lang)}"` : ""}>${escapeHtml(body)}</code></pre>`,
    line: (line) => {
      const heading = HEADING.exec(line)
      return heading === null ? undefined : `<h${heading[1]!.length}>${inline(heading[2]!)}</h${heading[1]!.length}>`
    },
    prose: inline
  }).replace(/(<\/(?:pre|h\d)>)\n/g, "$1").replace(/\n(<(?:pre|h\d)>)/g, "$1")

/** The fields of a text message's content: `formatted_body` only when the Markdown had markup. */
export const formattedContent = (markdown: string): { readonly format?: string; readonly formatted_body?: string } => {
  const html = toMatrixHtml(markdown)
  return html === escapeHtml(markdown).replace(/\n/g, "<br>") ? {} : { format: "org.matrix.custom.html", formatted_body: html }
}
