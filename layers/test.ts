/** The test host: a given config, an in-memory database, the scripted executor. */
import type { Duration } from "effect"
import type { PynchyConfig } from "../src/config/schema.js"
import { HostConfig } from "../src/config/HostConfig.js"
import * as Database from "../src/db/Database.js"
import * as ScriptedExecutor from "../src/agent/ScriptedExecutor.js"
import { makeStack } from "./stack.js"

export const makeTestHost = (config: PynchyConfig, options: { replyDelay?: Duration.Duration; databaseFile?: string } = {}) =>
  makeStack({
    config: HostConfig.layerFrom(config),
    database: options.databaseFile ? Database.layerFile(options.databaseFile) : Database.layerMemory,
    executor: ScriptedExecutor.layer(options.replyDelay ? { replyDelay: options.replyDelay } : undefined)
  })
