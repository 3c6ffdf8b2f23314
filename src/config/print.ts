import { Document, isScalar, visit } from "yaml"

/** Keys that hold a file mode: `mode`, or a name ending in `Mode` (`socketMode`). */
const MODE_KEY = /^mode$|Mode$/

/** The encoded config as YAML, with file modes in octal as they are written (`0o600`, not `384`). */
export const printConfig = (encoded: unknown): string => {
  const doc = new Document(encoded)
  visit(doc, {
    Pair: (_, pair) => {
      if (isScalar(pair.key) && MODE_KEY.test(String(pair.key.value)) && isScalar(pair.value) && typeof pair.value.value === "number") {
        pair.value.format = "OCT"
      }
    }
  })
  return doc.toString()
}
