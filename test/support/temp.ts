/**
 * Scratch directories for tests. Each is removed when its test file ends (the `afterAll` of
 * test/support/temp-cleanup.ts, a setup file, which runs after the file's own hooks have stopped
 * whatever used them), so a run of the suite leaves nothing under the OS temp dir.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const made: Array<string> = []

/** A fresh directory under the OS temp dir, removed when this test file ends. */
export const tempDir = (prefix = "pynchy-test-"): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  made.push(dir)
  return dir
}

/** Removes every directory `tempDir` made in this test file; what cannot be removed is named on stderr. */
export const removeTempDirs = (): void => {
  for (const dir of made.splice(0)) {
    try {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
    } catch (e) {
      process.stderr.write(`test temp dir ${dir} was not removed: ${String(e)}\n`)
    }
  }
}
