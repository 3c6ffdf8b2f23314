import * as fs from "node:fs"
import * as path from "node:path"

/** What a running host publishes for `pynchy status`: a small JSON file, atomically replaced. */
export interface LiveStatus {
  readonly pid: number
  readonly state: "starting" | "ready" | "stopping" | "stopped"
  readonly updatedAt: number
  /** Named sections contributed by services (runtimes, queue, gateway, ...). */
  readonly sections: Record<string, unknown>
}

export const statusFilePath = (dataDir: string) => path.join(dataDir, "status.json")

export const writeStatusFile = (dataDir: string, status: LiveStatus): void => {
  const file = statusFilePath(dataDir)
  const tmp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(tmp, JSON.stringify(status), { mode: 0o600 })
  fs.renameSync(tmp, file)
}

/** The status of a live host, or null when none is running (no file, or its pid is gone). */
export const readStatusFile = (dataDir: string): LiveStatus | null => {
  try {
    const status = JSON.parse(fs.readFileSync(statusFilePath(dataDir), "utf8")) as LiveStatus
    if (status.state !== "stopped") process.kill(status.pid, 0)
    return status
  } catch {
    return null
  }
}
