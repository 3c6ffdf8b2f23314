/**
 * Long replies cut into parts a platform accepts (Telegram: 4,096 characters), for every channel.
 * Cuts fall between paragraphs and around fenced code blocks where possible; a paragraph longer
 * than the limit is cut at a line end, then at a space, and only then inside a word; a code block
 * longer than the limit is cut at line ends and each piece is fenced again, so every part renders
 * on its own. Joining the parts with blank lines gives the text back (up to the re-added fences).
 */

interface Block {
  readonly text: string
  /** The opening fence line of a code block (```lang), absent for prose. */
  readonly fence?: string
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/

const blocksOf = (text: string): Array<Block> => {
  const lines = text.split("\n")
  const blocks: Array<Block> = []
  let prose: Array<string> = []
  const flush = () => {
    const t = prose.join("\n").trim()
    if (t.length > 0) for (const p of t.split(/\n[ \t]*\n+/)) blocks.push({ text: p })
    prose = []
  }
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) {
      prose.push(lines[i]!)
      continue
    }
    let end = i + 1
    while (end < lines.length && !(lines[end]!.trim().startsWith(open[1]!) && lines[end]!.trim().replace(/[`~]/g, "") === "")) end++
    flush()
    blocks.push({ text: lines.slice(i, Math.min(end + 1, lines.length)).join("\n"), fence: lines[i]!.trim() })
    i = end
  }
  flush()
  return blocks
}

/** Cuts `text` (no fences) into pieces of at most `limit`: at line ends, then spaces, then anywhere. */
const cutProse = (text: string, limit: number, separators: ReadonlyArray<string> = ["\n", " "]): Array<string> => {
  if (text.length <= limit) return [text]
  const [sep, ...rest] = separators
  if (sep === undefined) {
    const out: Array<string> = []
    for (let i = 0; i < text.length; i += limit) out.push(text.slice(i, i + limit))
    return out
  }
  const out: Array<string> = []
  let current = ""
  for (const piece of text.split(sep)) {
    const joined = current.length === 0 ? piece : current + sep + piece
    if (joined.length <= limit) {
      current = joined
      continue
    }
    if (current.length > 0) out.push(current)
    if (piece.length <= limit) current = piece
    else {
      const cut = cutProse(piece, limit, rest)
      out.push(...cut.slice(0, -1))
      current = cut.at(-1)!
    }
  }
  if (current.length > 0) out.push(current)
  return out
}

const cutCode = (block: Block, limit: number): Array<string> => {
  const open = block.fence!
  const close = open.match(/^(`{3,}|~{3,})/)![1]!
  const body = block.text.split("\n").slice(1)
  if (body.length > 0 && body.at(-1)!.trim().startsWith(close)) body.pop()
  const room = Math.max(1, limit - open.length - close.length - 2)
  return cutProse(body.join("\n"), room, ["\n"]).map((piece) => `${open}\n${piece}\n${close}`)
}

/** The parts of `text` for a platform that takes at most `limit` characters per message. */
export const splitText = (text: string, limit: number): Array<string> => {
  if (text.length <= limit) return [text]
  const parts: Array<string> = []
  let current = ""
  const add = (piece: string) => {
    const joined = current.length === 0 ? piece : `${current}\n\n${piece}`
    if (joined.length <= limit) current = joined
    else {
      if (current.length > 0) parts.push(current)
      current = piece
    }
  }
  for (const block of blocksOf(text)) {
    const pieces = block.text.length <= limit ? [block.text] : block.fence !== undefined ? cutCode(block, limit) : cutProse(block.text, limit)
    for (const piece of pieces) add(piece)
  }
  if (current.length > 0) parts.push(current)
  return parts
}
