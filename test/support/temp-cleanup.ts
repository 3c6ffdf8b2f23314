/**
 * A setup file (vitest.config.ts): registered before the test file's own hooks, so with vitest's
 * default `sequence.hooks: "stack"` this `afterAll` runs last, once the file has stopped its
 * hosts, servers and sandboxes, and removes the file's scratch directories (test/support/temp.ts).
 */
import { afterAll } from "vitest"
import { removeTempDirs } from "./temp.js"

afterAll(removeTempDirs)
