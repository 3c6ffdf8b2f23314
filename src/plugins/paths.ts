import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const upFrom = <A>(start: string, probe: (dir: string) => A | undefined): A | undefined => {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    const found = probe(dir)
    if (found !== undefined) return found
    if (path.dirname(dir) === dir) return undefined
  }
}

let cachedRoot: string | undefined

/**
 * The folder of the host's own package.json. The same walk works from the sources (src/plugins/)
 * and from the bundle (dist/pynchy.cjs), since both sit one level or two below it.
 */
export const hostPackageRoot = (): string =>
  (cachedRoot ??= upFrom(path.dirname(fileURLToPath(import.meta.url)), (dir) =>
    fs.existsSync(path.join(dir, "package.json")) ? dir : undefined
  ) ?? process.cwd())

/** The folder of an installed package as Node would resolve it from `from` (node_modules upwards). */
export const installedPackageDir = (name: string, from: string): string | undefined =>
  upFrom(from, (dir) => {
    const candidate = path.join(dir, "node_modules", name)
    return fs.existsSync(path.join(candidate, "package.json")) ? candidate : undefined
  })
