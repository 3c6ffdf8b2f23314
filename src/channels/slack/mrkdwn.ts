/**
 * The agent's Markdown as Slack mrkdwn, and Slack's text back as plain text for the agent.
 *
 * Slack reserves only `&`, `<` and `>` (escaped as entities everywhere, code included); its
 * markup differs from Markdown: `*bold*`, `_italic_`, `~strike~`, `<url|label>` links, no
 * headings (shown bold) and no `[label](url)`. Code blocks and inline code keep their content;
 * a fence's language tag is dropped (Slack would show it as a line of code). A user or channel
 * mention written the Slack way (`<@U123>`, `<#C123>`) is kept, so the agent can mention someone;
 * any other `<...>` (`<!channel>`, which would notify everyone) is escaped.
 */
import { headingText, renderMarkdown } from "../markdown.js"

/** Text made literal in Slack: its three reserved characters as entities. */
export const escapeText = (s: string): string => s.replace(/[&<>]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : "&gt;"))

const INLINE = new RegExp(
  [
    /(`+)([^`][\s\S]*?)\1/.source, // 1, 2: inline code
    /\*\*(?=\S)([\s\S]+?)(?<=\S)\*\*/.source, // 3: bold
    /~~(?=\S)([\s\S]+?)(?<=\S)~~/.source, // 4: strikethrough
    /\[([^\]\n]+)\]\((https?:\/\/[^)\s]+|mailto:[^)\s]+)\)/.source, // 5, 6: link
    /(?<![\w*\\])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])/.source, // 7: italic with *
    /(?<![\w_\\])_(?=[^\s_])([^_\n]+?)(?<=\S)_(?![\w_])/.source, // 8: italic with _
    /(<@[UW][A-Z0-9]+>|<#C[A-Z0-9]+(?:\|[\w.-]*)?>)/.source // 9: a user or channel mention, kept
  ].join("|"),
  "g"
)

const inline = (text: string): string => {
  let out = ""
  let at = 0
  for (const m of text.matchAll(INLINE)) {
    out += escapeText(text.slice(at, m.index))
    if (m[2] !== undefined) out += "`" + escapeText(m[2]) + "`"
    else if (m[3] !== undefined) out += "*" + inline(m[3]) + "*"
    else if (m[4] !== undefined) out += "~" + inline(m[4]) + "~"
    // A label cannot hold `|` or `>` inside <url|label>.
    else if (m[5] !== undefined) out += "<" + m[6]!.replace(/[|<>]/g, encodeURIComponent) + "|" + escapeText(m[5].replace(/\|/g, "/")) + ">"
    else if (m[9] !== undefined) out += m[9]
    else out += "_" + inline(m[7] ?? m[8]!) + "_"
    at = m.index + m[0].length
  }
  return out + escapeText(text.slice(at))
}

const BULLET = /^(\s*)[-*+]\s+(.*)$/

/** Converts Markdown to mrkdwn: fences, headings and bullets line by line, the rest inline. */
export const toMrkdwn = (markdown: string): string =>
  renderMarkdown(markdown, {
    code: (_lang, body) => "```\n" + escapeText(body) + "\n```",
    line: (line) => {
      const heading = headingText(line)
      if (heading !== undefined) return "*" + inline(heading) + "*"
      const bullet = BULLET.exec(line)
      return bullet !== null && !/^\s*\*\*/.test(line) ? bullet[1]! + "• " + inline(bullet[2]!) : undefined
    },
    prose: inline
  })

/**
 * A message's text as the agent reads it: Slack's entities decoded (`&amp;` last, so `&amp;lt;`
 * stays `&lt;`), links shown as their label or address; user mentions (`<@U123>`) are kept, so
 * the agent and the trigger check see who was mentioned.
 */
export const fromSlackText = (text: string): string =>
  text
    .replace(/<((?:https?|mailto):[^|>]+)\|([^>]+)>/g, "$2 ($1)")
    .replace(/<((?:https?|mailto):[^|>]+)>/g, "$1")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
