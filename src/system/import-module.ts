/**
 * import() of a module the CLI bundle leaves outside it: an optional SDK (the platforms',
 * OpenTelemetry's, the tokenizer's), a plugin's own file, a ClawConnect runtime module.
 *
 * The bundle runs as a script compiled with V8's code cache (bin/pynchy.js), and node 20 loses a
 * cached script's import() callback: an import() written in the bundle fails there ("A dynamic
 * import callback was not specified"). So the entry point lends its own import() on globalThis;
 * it resolves from the package, as the bundle would. Run from the sources (tests, tsx) nothing is
 * lent and this is the native import(). The build fails when the bundle holds any other import().
 */
const LENT = Symbol.for("pynchy.import")

export const importModule = <A = Record<string, unknown>>(specifier: string): Promise<A> => {
  const lent = (globalThis as { readonly [LENT]?: (specifier: string) => Promise<unknown> })[LENT]
  return (lent !== undefined ? lent(specifier) : import(specifier)) as Promise<A>
}
