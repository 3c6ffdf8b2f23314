import { Command } from "@effect/cli"
import type { Layer } from "effect"
import { VERSION } from "../version.js"
import type { RuntimeEntry } from "../runtimes/ConnectionRuntimes.js"
import { chat } from "./commands/chat.js"
import { config } from "./commands/config.js"
import { conversations } from "./commands/conversations.js"
import { deploy } from "./commands/deploy.js"
import { doctor } from "./commands/doctor.js"
import { keys } from "./commands/keys.js"
import { mcp } from "./commands/mcp.js"
import { plugins } from "./commands/plugins.js"
import { send } from "./commands/send.js"
import { start } from "./commands/start.js"
import type { HostConfig } from "../config/HostConfig.js"
import type { MessageStore } from "../db/MessageStore.js"
import type { Ingest } from "../pipeline/Ingest.js"
import { status } from "./commands/status.js"
import { trace } from "./commands/trace.js"
import { tasks } from "./commands/tasks.js"
import { runCli } from "./run.js"

/** What the commands run on; the composition (layers/) decides. */
export interface Stacks<E, EC> {
  /** The whole host, with extra connection runtimes (the terminal chat's); `start` holds it open. */
  readonly makeHost: (extra: ReadonlyArray<RuntimeEntry>) => Layer.Layer<never, E>
  /** Database access and durable ingest without running a host (`send`). */
  readonly client: Layer.Layer<Ingest | MessageStore | HostConfig, EC>
}

export const makeCli = <E, EC>(stacks: Stacks<E, EC>) =>
  runCli(
    Command.make("pynchy").pipe(
      Command.withDescription("A host for a personal AI assistant."),
      Command.withSubcommands([start(stacks.makeHost), chat(stacks.makeHost), send(stacks.client), status, trace, conversations, config, doctor, keys, plugins, deploy, mcp, tasks])
    ),
    { name: "pynchy", version: VERSION }
  )
