import { Command, Options } from "@effect/cli"
import { Config, Deferred, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { redirectStdout } from "../../channels/stdout.js"
import { startChatUi, type ChatUi } from "../../channels/terminal/chat-ui.js"
import { connectHttp } from "../../channels/terminal/http-connect.js"
import { makeTerminalRuntime } from "../../channels/terminal/TerminalRuntime.js"
import { HostConfig } from "../../config/HostConfig.js"
import type { RuntimeEntry } from "../../runtimes/ConnectionRuntimes.js"
import { bwrapProbe, logSandboxWarning, sandboxWarning } from "../../sandbox/select.js"
import * as Logging from "../logger.js"

const session = Options.text("session").pipe(
  Options.withAlias("s"),
  Options.withDefault("default"),
  Options.withDescription("The conversation: terminal:<session> (embedded) or the HTTP place (--connect).")
)
const connect = Options.text("connect").pipe(
  Options.optional,
  Options.withDescription("Talk to a running host through its HTTP API connection (e.g. http://127.0.0.1:8787); the token comes from PYNCHY_TOKEN or --token-file.")
)
const tokenFile = Options.file("token-file", { exists: "yes" }).pipe(Options.optional, Options.withDescription("A file holding the HTTP API bearer token."))

/**
 * Runs the embedded chat: the host with one more connection runtime, the terminal, until the user
 * leaves. In a terminal the host's log goes to `<dataDir>/pynchy.log` (the banner says so), and its
 * warnings and what it prints on stdout (`cli` replies) appear above the prompt; without one,
 * warnings go to stderr.
 */
export const embeddedChat = <E>(makeHost: (extra: ReadonlyArray<RuntimeEntry>) => Layer.Layer<never, E>, place: string) =>
  Effect.gen(function* () {
    const { dataDir, config } = yield* HostConfig.load
    const tty = process.stdin.isTTY === true && process.stdout.isTTY === true
    // Without bwrap the warning is known at once: in a terminal the banner says it; without one it
    // goes to stderr with the host's warnings. With bwrap it waits for the probe (a real sandbox,
    // ~100 ms), which runs once the host is up, and comes as a warning like the host's.
    const bwrapInstalled = bwrapProbe.installed()
    const warning = bwrapInstalled ? undefined : yield* sandboxWarning(config)
    if (warning !== undefined && !tty) yield* Effect.logWarning(warning)
    const logFile = path.join(dataDir, "pynchy.log")
    let screen: ChatUi | undefined
    const opened = yield* Deferred.make<ChatUi>()
    const runtime = makeTerminalRuntime({
      session: place,
      openUi: (send) =>
        startChatUi({
          input: process.stdin,
          output: process.stdout,
          historyFile: path.join(dataDir, "chat-history"),
          send,
          notes: [`host log: ${logFile}`],
          ...(warning !== undefined ? { warning } : {})
        }),
      onOpen: (ui) => {
        screen = ui
        const restore = tty ? redirectStdout(ui.print) : () => {}
        void ui.done.then(() => {
          screen = undefined
          restore()
        })
        Deferred.unsafeDone(opened, Effect.succeed(ui))
      }
    })
    const run = Effect.scoped(
      Effect.gen(function* () {
        yield* Layer.build(makeHost([{ plugin: "terminal", value: runtime }]))
        if (bwrapInstalled) yield* Effect.forkScoped(logSandboxWarning(config))
        const ui = yield* Deferred.await(opened)
        yield* Effect.promise(() => ui.done)
      })
    )
    return yield* tty
      ? Effect.provide(run, Logging.layerChat(logFile, () => screen?.print))
      : Logger.withMinimumLogLevel(run, LogLevel.Warning)
  })

const connected = (url: string, token: string, place: string) =>
  Effect.async<void>((resume) => {
    const conversation = connectHttp(url, token, place)
    const ui = startChatUi({ input: process.stdin, output: process.stdout, send: conversation.send, title: `pynchy chat → ${url}` })
    conversation.listen(ui.reply, ui.info)
    void ui.done.then(() => {
      conversation.stop()
      resume(Effect.void)
    })
    return Effect.sync(() => ui.close())
  })

const readToken = (file: Option.Option<string>) =>
  Option.match(file, {
    onSome: (f) => Effect.sync(() => fs.readFileSync(f, "utf8").trim()),
    onNone: () => Effect.map(Config.option(Config.redacted("PYNCHY_TOKEN")), Option.match({ onNone: () => "", onSome: (t) => Redacted.value(t).trim() }))
  })

/**
 * `pynchy chat`: an interactive conversation with the host. Embedded by default (the host runs in
 * this process); `--connect <url>` talks to a running host's
 * HTTP API instead. `makeHost` is the composition's host stack with extra connection runtimes.
 */
export const chat = <E>(makeHost: (extra: ReadonlyArray<RuntimeEntry>) => Layer.Layer<never, E>) =>
  Command.make("chat", { session, connect, tokenFile }, ({ session, connect, tokenFile }) =>
    Option.match(connect, {
      onNone: () => embeddedChat(makeHost, session),
      onSome: (url) =>
        Effect.flatMap(readToken(tokenFile), (token) =>
          token === ""
            ? Effect.sync(() => {
              process.stderr.write("pynchy chat --connect needs a token: set PYNCHY_TOKEN or pass --token-file\n")
              process.exitCode = 2
            })
            : connected(url, token, session))
    })
  ).pipe(Command.withDescription("Chat with the assistant in this terminal (embedded host, or --connect to a running one)."))
