/** One measured figure. A suite (`scripts/bench/<name>.bench.ts`) default-exports `async () => Array<Row>`. */
export type Row = {
  readonly name: string
  readonly value: number
  readonly unit: string
  /** What the same machine does without our layer, measured in the same run; ratio = value / baseline.value. */
  readonly baseline?: { readonly name: string; readonly value: number }
  /** The target from the issue, as text (e.g. "≤ 400 ms"). */
  readonly goal?: string
}

export type Suite = () => Promise<ReadonlyArray<Row>>
