/**
 * Runs the `pynchy` command on argv, with what @effect/cli leaves to its caller: a parse error is
 * printed as text with the usage of the command that was meant (exit 2) instead of reaching the
 * logger as a structure; a subcommand's `--help` names the whole command (`$ pynchy config check`,
 * where the library prints `$ check`); and no colour is written to a stream that is not a
 * terminal, or anywhere when NO_COLOR is set.
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as CommandDescriptor from "@effect/cli/CommandDescriptor"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Span from "@effect/cli/HelpDoc/Span"
import * as Usage from "@effect/cli/Usage"
import * as ValidationError from "@effect/cli/ValidationError"
import { Console, Effect, Option } from "effect"
import { failureText } from "./failure.js"

/** The command's descriptor as @effect/cli 0.77 builds it; it has no public walk into nested subcommands. */
type Node =
  | { readonly _tag: "Standard" | "GetUserInput"; readonly name: string }
  | { readonly _tag: "Map"; readonly command: Node }
  | { readonly _tag: "Subcommands"; readonly parent: Node; readonly children: ReadonlyArray<Node> }

const nameOf = (node: Node): string => (node._tag === "Map" ? nameOf(node.command) : node._tag === "Subcommands" ? nameOf(node.parent) : node.name)
const childrenOf = (node: Node): ReadonlyArray<Node> => (node._tag === "Map" ? childrenOf(node.command) : node._tag === "Subcommands" ? node.children : [])

/** The commands the arguments name, outermost first: the root, then each argument naming a subcommand of the one before. */
export const commandPath = (root: Node, args: ReadonlyArray<string>): ReadonlyArray<Node> => {
  const path = [root]
  for (const arg of args) {
    if (arg.startsWith("-")) continue
    const next = childrenOf(path[path.length - 1]!).find((child) => nameOf(child) === arg)
    if (next === undefined) break
    path.push(next)
  }
  return path
}

const descriptorOf = (node: Node) => node as unknown as CommandDescriptor.Command<unknown>

/** `$ pynchy config check ...` lines: the outer commands by name, then the usage of the last. */
const usageDoc = (path: ReadonlyArray<Node>): HelpDoc.HelpDoc => {
  const outer = path.slice(0, -1).map(nameOf)
  const own = CommandDescriptor.getUsage(descriptorOf(path[path.length - 1]!))
  const usage = outer.reduceRight((rest, name) => Usage.concat(Usage.named([name], Option.none()), rest), own)
  return HelpDoc.blocks([
    HelpDoc.h1("USAGE"),
    ...Usage.enumerate(usage, CliConfig.defaultConfig).map((span) => HelpDoc.p(Span.concat(Span.text("$ "), span)))
  ])
}

const helpDoc = (path: ReadonlyArray<Node>, version: string): HelpDoc.HelpDoc =>
  HelpDoc.blocks([
    HelpDoc.h1(Span.code(nameOf(path[0]!))),
    HelpDoc.p(`${nameOf(path[0]!)} ${version}`),
    usageDoc(path),
    CommandDescriptor.getHelp(descriptorOf(path[path.length - 1]!), CliConfig.defaultConfig)
  ])

// Select Graphic Rendition sequences: the only escapes @effect/cli's help and errors write.
const SGR = /\x1b\[[0-9;]*m/g
const strip = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a.replace(SGR, "") : a))

/** Whether colour may be written to a stream (https://no-color.org: NO_COLOR set and not empty turns it off). */
export const colourOn = (stream: { readonly isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env) =>
  stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "")

const withoutColour = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.console, (base) => {
    const out = colourOn(process.stdout) ? (args: ReadonlyArray<unknown>) => args : strip
    const err = colourOn(process.stderr) ? (args: ReadonlyArray<unknown>) => args : strip
    return Console.withConsole(effect, {
      ...base,
      log: (...args) => base.log(...out(args)),
      info: (...args) => base.info(...out(args)),
      error: (...args) => base.error(...err(args)),
      warn: (...args) => base.warn(...err(args))
    })
  })

/** Any failure of a command is printed as its message, never as a logged cause with stack frames (exit 1). */
const reportFailure = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.catchAllCause(program, (cause) => {
    const text = failureText(cause)
    return text === undefined
      ? Effect.failCause(cause)
      : Console.error(text).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))
  })

/** The usage error exit code (as getopt-style tools use it). */
export const USAGE_EXIT_CODE = 2

export const runCli = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>, app: { readonly name: string; readonly version: string }) => {
  const run = Command.run(command, app)
  const root = command.descriptor as unknown as Node
  return (argv: ReadonlyArray<string>) => {
    const args = argv.slice(2)
    const path = commandPath(root, args)
    const helpRequested = path.length > 1 && (args.includes("--help") || args.includes("-h"))
    const program = helpRequested
      ? Console.log(HelpDoc.toAnsiText(helpDoc(path, app.version)))
      : run(argv).pipe(
        Effect.catchIf(ValidationError.isValidationError, () =>
          // The library printed what was wrong; say how the command is used.
          Console.error(
            HelpDoc.toAnsiText(HelpDoc.blocks([usageDoc(path), HelpDoc.p(`Run \`${path.map(nameOf).join(" ")} --help\` for more.`)]))
          ).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = USAGE_EXIT_CODE))))
        )
      )
    return withoutColour(reportFailure(program))
  }
}
