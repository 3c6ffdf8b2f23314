/**
 * The agent's Markdown as Telegram MarkdownV2. Code blocks, inline code, bold, italic,
 * strikethrough, links and headings (shown bold) keep their meaning; every other character
 * MarkdownV2 reserves is escaped, so any text, Markdown or not, is accepted by Telegram and shown
 * as written. The channel still falls back to plain text if Telegram refuses the entities.
 */
import { headingText, renderMarkdown } from "../markdown.js"

const RESERVED = /[_*[\]()~`>#+\-=|{}.!\\]/g

/** Plain text made literal in MarkdownV2. */
export const escapeText = (s: string): string => s.replace(RESERVED, (c) => `\\${c}`)
/** Inside `code` and ```pre```: only ` and \ are escaped. */
const escapeCode = (s: string): string => s.replace(/[`\\]/g, (c) => `\\${c}`)
/** Inside the (...) of a link: only ) and \ are escaped. */
const escapeUrl = (s: string): string => s.replace(/[)\\]/g, (c) => `\\${c}`)

const INLINE = new RegExp(
  [
    /(`+)([^`][\s\S]*?)\1/.source, // 1, 2: inline code
    /\*\*(?=\S)([\s\S]+?)(?<=\S)\*\*/.source, // 3: bold
    /~~(?=\S)([\s\S]+?)(?<=\S)~~/.source, // 4: strikethrough
    /\[([^\]\n]+)\]\((https?:\/\/[^)\s]+|mailto:[^)\s]+)\)/.source, // 5, 6: link
    /(?<![\w*\\])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])/.source, // 7: italic with *
    /(?<![\w_\\])_(?=[^\s_])([^_\n]+?)(?<=\S)_(?![\w_])/.source // 8: italic with _
  ].join("|"),
  "g"
)

const inline = (text: string): string => {
  let out = ""
  let at = 0
  for (const m of text.matchAll(INLINE)) {
    out += escapeText(text.slice(at, m.index))
    if (m[2] !== undefined) out += "`" + escapeCode(m[2]) + "`"
    else if (m[3] !== undefined) out += "*" + inline(m[3]) + "*"
    else if (m[4] !== undefined) out += "~" + inline(m[4]) + "~"
    else if (m[5] !== undefined) out += "[" + inline(m[5]) + "](" + escapeUrl(m[6]!) + ")"
    else out += "_" + inline(m[7] ?? m[8]!) + "_"
    at = m.index + m[0].length
  }
  return out + escapeText(text.slice(at))
}

/** Converts Markdown to MarkdownV2, line by line for fences and headings, inline for the rest. */
export const toMarkdownV2 = (markdown: string): string =>
  renderMarkdown(markdown, {
    code: (lang, body) => "```" + lang + "\n" + escapeCode(body) + "\n```",
    line: (line) => {
      const heading = headingText(line)
      return heading === undefined ? undefined : "*" + inline(heading) + "*"
    },
    prose: inline
  })
