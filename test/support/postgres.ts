/**
 * A scratch PostgreSQL cluster for tests and benches: initdb with trust auth, pg_ctl on 127.0.0.1
 * with a private socket folder and a free port, fsync off. As root it runs as an unprivileged user
 * (initdb refuses root): `postgres` (the Debian package's) or the sandbox user.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const INSTALL = "apt-get install postgresql (scripts/system/install-apt.sh)"

/** The folder with initdb and pg_ctl: PYNCHY_PG_BIN, else the newest /usr/lib/postgresql/<n>/bin. */
export const postgresBin = (): string | undefined => {
  const env = process.env.PYNCHY_PG_BIN
  if (env !== undefined) return fs.existsSync(path.join(env, "initdb")) ? env : undefined
  const root = "/usr/lib/postgresql"
  if (!fs.existsSync(root)) return undefined
  const versions = fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a))
  return versions.length > 0 ? path.join(root, versions[0]!, "bin") : undefined
}

/**
 * Whether a Postgres test should be skipped: yes (with a message) where PostgreSQL is not
 * installed; with PYNCHY_REQUIRE_SYSTEM=1 (CI) its absence is a failure.
 */
export const skipWithoutPostgres = (): boolean => {
  if (postgresBin() !== undefined) return false
  if (process.env.PYNCHY_REQUIRE_SYSTEM === "1") throw new Error(`PostgreSQL is required (PYNCHY_REQUIRE_SYSTEM=1) but not installed: ${INSTALL}`)
  console.warn(`skipping: PostgreSQL is not installed (${INSTALL})`)
  return true
}

/** A free TCP port on 127.0.0.1 (asked of the kernel, synchronously through a child). */
const freePort = (): number =>
  Number(execFileSync(process.execPath, ["-e", "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"]).toString())

/** The user the cluster runs as when we are root, with a command prefix that becomes it. */
const runAs = (): { readonly user: string; readonly uid: number; readonly gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  for (const user of ["postgres", "pynchy-sandbox"]) {
    try {
      const [uid, gid] = execFileSync("id", ["-u", user]).toString().trim().concat(" ", execFileSync("id", ["-g", user]).toString().trim()).split(" ").map(Number)
      return { user, uid: uid!, gid: gid! }
    } catch {
      // no such user: try the next
    }
  }
  throw new Error("running as root, and neither the postgres user nor pynchy-sandbox exists to run PostgreSQL as (scripts/system/sandbox-user.sh)")
}

export interface ScratchPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string
  readonly port: number
  /** A fresh, empty database on the cluster; its url. */
  readonly createDatabase: (name?: string) => string
  /** The server's log so far (errors name the statement that failed). */
  readonly log: () => string
  /** Stops the cluster (fast shutdown) and removes its folder. */
  readonly stop: () => void
}

let databases = 0

/** Starts a scratch cluster (about a second). The caller stops it. */
export const startScratchPostgres = (): ScratchPostgres => {
  const bin = postgresBin()
  if (bin === undefined) throw new Error(`PostgreSQL is not installed: ${INSTALL}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-pg-"))
  const data = path.join(dir, "data")
  const sockets = path.join(dir, "sockets")
  fs.mkdirSync(sockets)
  const as = runAs()
  if (as !== undefined) {
    for (const p of [dir, sockets]) fs.chownSync(p, as.uid, as.gid)
  }
  const exec = (cmd: string, args: ReadonlyArray<string>) =>
    as === undefined
      ? execFileSync(path.join(bin, cmd), args, { stdio: "pipe" })
      : execFileSync("setpriv", [`--reuid=${as.uid}`, `--regid=${as.gid}`, "--clear-groups", "--", path.join(bin, cmd), ...args], { stdio: "pipe", cwd: dir })
  exec("initdb", ["-D", data, "--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"])
  const port = freePort()
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${sockets} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`
  exec("pg_ctl", ["-D", data, "-o", options, "-l", path.join(dir, "log"), "-w", "-t", "60", "start"])
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    try {
      exec("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"])
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const createDatabase = (name = `pynchy_${process.pid}_${++databases}`) => {
    execFileSync(path.join(bin, "psql"), ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", `CREATE DATABASE ${name}`], { stdio: "pipe" })
    return `postgres://postgres@127.0.0.1:${port}/${name}`
  }
  const log = () => fs.readFileSync(path.join(dir, "log"), "utf8")
  return { url, port, createDatabase, log, stop }
}
