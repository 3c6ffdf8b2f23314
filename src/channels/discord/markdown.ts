/**
 * The agent's Markdown as Discord shows it. Discord speaks Markdown (bold, italic, code, code
 * blocks, links, lists, quotes, headings # to ###), so most text passes through unchanged. What
 * Discord reads differently is rewritten, outside code only:
 *
 * - `__text__` is underline on Discord, bold in Markdown: it becomes `**text**`;
 * - `||` is Discord's spoiler marker (it would hide text): escaped;
 * - headings #### to ###### are not Discord's: shown bold;
 * - `-# ` at a line start is Discord's small "subtext": escaped.
 *
 * Mentions are not escaped here: every send carries `allowed_mentions: { parse: [] }`, so an
 * `@everyone` or `<@id>` in a reply shows but pings nobody.
 */

const FENCE = /^ {0,3}(`{3,}|~{3,})/
const INLINE_CODE = /(`+)[^`][\s\S]*?\1/g

const prose = (text: string): string =>
  text
    .replace(/(?<![\w_\\])__(?=\S)([^_\n]+?)(?<=\S)__(?![\w_])/g, "**$1**")
    .replace(/\|\|/g, "\\|\\|")

const inline = (line: string): string => {
  let out = ""
  let at = 0
  for (const m of line.matchAll(INLINE_CODE)) {
    out += prose(line.slice(at, m.index))
    out += m[0]
    at = m.index + m[0].length
  }
  return out + prose(line.slice(at))
}

const proseLine = (line: string): string => {
  const deep = /^ {0,3}#{4,6}\s+(.*?)\s*#*\s*$/.exec(line)
  if (deep !== null) return `**${inline(deep[1]!)}**`
  const subtext = /^(\s*)-#(\s)/.exec(line)
  if (subtext !== null) return `${subtext[1]}\\-#${subtext[2]}${inline(line.slice(subtext[0].length))}`
  return inline(line)
}

/** Converts Markdown for Discord: fenced code untouched, the rest line by line. */
export const toDiscordMarkdown = (markdown: string): string => {
  const lines = markdown.split("\n")
  const out: Array<string> = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) {
      out.push(proseLine(lines[i]!))
      continue
    }
    let end = i + 1
    while (end < lines.length && !(lines[end]!.trim().startsWith(open[1]!) && lines[end]!.trim().replace(/[`~]/g, "") === "")) end++
    out.push(...lines.slice(i, Math.min(end + 1, lines.length)))
    i = end
  }
  return out.join("\n")
}
