/**
 * The near word for a typo: `modle` is `model`, `worksapces` is `workspaces`. Distance is the
 * optimal string alignment distance (insert, delete, substitute, swap two neighbours), compared
 * case-insensitively.
 */

/** Edits (insert, delete, substitute, transpose neighbours) between two strings. */
export const editDistance = (a: string, b: string): number => {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: Array<Array<number>> = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1)
      d[i]![j] = best
    }
  }
  return d[a.length]![b.length]!
}

/**
 * The one candidate close enough to `word` to be what was meant: within a third of its length
 * (at least one edit, at most three), and closer than any other; none when two tie or none is near.
 */
export const nearest = (word: string, candidates: ReadonlyArray<string>): string | undefined => {
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)))
  const w = word.toLowerCase()
  let best: string | undefined
  let bestDistance = Infinity
  let tie = false
  for (const c of candidates) {
    const distance = editDistance(w, c.toLowerCase())
    if (distance > limit || distance > bestDistance) continue
    tie = distance === bestDistance && best !== c
    if (distance < bestDistance) tie = false
    best = c
    bestDistance = distance
  }
  return tie ? undefined : best
}
