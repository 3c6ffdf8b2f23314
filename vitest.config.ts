import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/quiet-logs.ts", "test/support/temp-cleanup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: the crash and system tests spawn real processes; keep the file-level fan-out small.
    maxWorkers: 2,
    minWorkers: 1
  }
})
