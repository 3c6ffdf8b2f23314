/**
 * The in-process hosts of the tests log at info, and every line a test prints is a message from
 * the test worker to vitest's main process. Under load those messages queue (a whole-suite run
 * under `stress --cpu 2` once lost vitest's own task update to a 60 s RPC timeout behind them),
 * and no test reads them. So the info and debug lines of Effect's logger are dropped here, before
 * they leave the worker; warnings and errors still print. `PYNCHY_TEST_LOGS=all` keeps every line.
 * A setup file (vitest.config.ts), so it runs in each test file's worker before the test imports.
 */
const QUIET = /^timestamp=\S+ level=(?:INFO|DEBUG|TRACE) /

if (process.env.PYNCHY_TEST_LOGS !== "all") {
  const log = console.log.bind(console)
  console.log = (...args: Array<unknown>) => {
    if (args.length === 1 && typeof args[0] === "string" && QUIET.test(args[0])) return
    log(...args)
  }
}
