/**
 * The block structure every Markdown converter of the channels shares (Telegram's MarkdownV2,
 * Slack's mrkdwn): fenced code blocks, lines a platform renders on their own (headings,
 * bullets), and runs of prose between them, which are converted inline as one text.
 */
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/

export interface MarkdownRenderer {
  /** A fenced block: its language (empty when none) and its body, unchanged. */
  readonly code: (lang: string, body: string) => string
  /** A line the platform renders on its own, or undefined to keep it in the prose around it. */
  readonly line: (line: string) => string | undefined
  /** A run of prose lines, joined by newlines. */
  readonly prose: (text: string) => string
}

/** Renders Markdown block by block; an unclosed fence runs to the end of the text. */
export const renderMarkdown = (markdown: string, render: MarkdownRenderer): string => {
  const lines = markdown.split("\n")
  const out: Array<string> = []
  let prose: Array<string> = []
  const flush = () => {
    if (prose.length > 0) out.push(render.prose(prose.join("\n")))
    prose = []
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const fence = FENCE.exec(line)
    if (fence !== null) {
      const close = lines.findIndex((l, j) => j > i && l.trim().startsWith(fence[1]!) && l.trim().replace(/[`~]/g, "") === "")
      const end = close === -1 ? lines.length : close
      flush()
      out.push(render.code(fence[2] ?? "", lines.slice(i + 1, end).join("\n")))
      i = end
      continue
    }
    const own = render.line(line)
    if (own !== undefined) {
      flush()
      out.push(own)
    } else {
      prose.push(line)
    }
  }
  flush()
  return out.join("\n")
}

/** An ATX heading's text (`## Title ##` → `Title`), or undefined. */
export const headingText = (line: string): string | undefined => /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
