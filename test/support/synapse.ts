/**
 * A real Synapse homeserver for tests: scripts/system/synapse.sh runs it from the Debian sid root
 * under bwrap on a free 127.0.0.1 port, one per test file. Users are registered through the
 * shared-secret admin API; `MatrixUser` sends and reads messages as a person would.
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { createHmac, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { tempDir } from "./db.js"
import { hasCommand } from "./system.js"
import { eventually } from "./eventually.js"

const cache = () => process.env.PYNCHY_SYSTEM_CACHE ?? "/var/cache/pynchy"
const root = () => path.join(cache(), "sid-root")
const SCRIPT = path.resolve(import.meta.dirname, "../../scripts/system/synapse.sh")

/** Whether a Synapse test should skip (with a message); fails instead under PYNCHY_REQUIRE_SYSTEM=1. */
export const skipWithoutSynapse = (): boolean => {
  if (fs.existsSync(path.join(root(), "usr/bin/synapse_homeserver")) && hasCommand("bwrap")) return false
  const how = "run scripts/system/sid-root.sh (Debian sid root with matrix-synapse), with bwrap installed"
  if (process.env.PYNCHY_REQUIRE_SYSTEM === "1") throw new Error(`Synapse is required (PYNCHY_REQUIRE_SYSTEM=1) but missing at ${root()}: ${how}`)
  console.warn(`skipping: no Synapse in a Debian sid root at ${root()} (${how})`)
  return true
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

/**
 * Requests a client may repeat after a connection failure: GETs, and PUTs, whose transaction id
 * makes the homeserver apply a message once however often it arrives (Client-Server API, "Transaction
 * identifiers").
 */
const RETRYABLE = new Set(["GET", "PUT"])

const call = async (baseUrl: string, method: string, urlPath: string, body?: unknown, token?: string): Promise<any> => {
  let res: Response
  for (let attempt = 1; ; attempt++) {
    try {
      res = await fetch(`${baseUrl}${urlPath}`, {
        method,
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {})
      })
      break
    } catch (e) {
      // After the homeserver restarts, fetch may pick a kept-alive connection to the old process
      // whose close it has not read yet (the synchronous stop and start hold the event loop), and
      // fail with "other side closed". A Matrix client retries such a request; so does this one.
      if (!RETRYABLE.has(method) || attempt >= 3) throw e
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${urlPath.split("?")[0]} -> ${res.status} ${text.slice(0, 300)}`)
  return text === "" ? {} : JSON.parse(text)
}

export interface RoomMessage {
  readonly eventId: string
  readonly sender: string
  /** `m.text`, `m.notice`, or a file's `m.image`, `m.file`, ... (whose body is its name or caption). */
  readonly msgtype: string
  readonly body: string
  /** The HTML of a formatted message (`org.matrix.custom.html`). */
  readonly formattedBody?: string
}

/** A person (or the bot) talking to the homeserver over the Client-Server API. */
export class MatrixUser {
  constructor(readonly baseUrl: string, readonly userId: string, readonly accessToken: string, readonly password: string) {}

  private req(method: string, urlPath: string, body?: unknown) {
    return call(this.baseUrl, method, urlPath, body, this.accessToken)
  }

  async createRoom(invite: ReadonlyArray<string> = []): Promise<string> {
    const r = await this.req("POST", "/_matrix/client/v3/createRoom", { preset: "private_chat", invite })
    return r.room_id as string
  }

  async join(roomId: string): Promise<void> {
    await this.req("POST", `/_matrix/client/v3/join/${encodeURIComponent(roomId)}`, {})
  }

  async members(roomId: string): Promise<Array<string>> {
    const r = await this.req("GET", `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/joined_members`)
    return Object.keys(r.joined ?? {})
  }

  async send(roomId: string, text: string, txnId: string = randomUUID()): Promise<string> {
    const r = await this.req("PUT", `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(txnId)}`, { msgtype: "m.text", body: text })
    return r.event_id as string
  }

  /** A text that mentions users the way clients do (`m.mentions`, Matrix 1.7 intentional mentions). */
  async mention(roomId: string, text: string, userIds: ReadonlyArray<string>): Promise<string> {
    const r = await this.req("PUT", `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(randomUUID())}`, {
      msgtype: "m.text", body: text, "m.mentions": { user_ids: userIds }
    })
    return r.event_id as string
  }

  /** Any m.room.message content, as a client would send it. */
  async sendContent(roomId: string, content: Record<string, unknown>): Promise<string> {
    const r = await this.req("PUT", `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(randomUUID())}`, content)
    return r.event_id as string
  }

  /** Uploads bytes to the media repository; answers the `mxc://` URI. */
  async upload(bytes: Uint8Array, mimeType: string, filename: string): Promise<string> {
    const res = await fetch(`${this.baseUrl}/_matrix/media/v3/upload?filename=${encodeURIComponent(filename)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.accessToken}`, "content-type": mimeType },
      body: bytes
    })
    if (!res.ok) throw new Error(`upload -> ${res.status}`)
    return ((await res.json()) as { content_uri: string }).content_uri
  }

  /** A file message the way clients send one: uploaded, then `msgtype` with `url`, `info` and, with a caption, `filename`. */
  async sendFile(roomId: string, file: { readonly msgtype: string; readonly name: string; readonly mimeType: string; readonly bytes: Uint8Array; readonly caption?: string }): Promise<string> {
    const url = await this.upload(file.bytes, file.mimeType, file.name)
    return this.sendContent(roomId, {
      msgtype: file.msgtype,
      url,
      info: { mimetype: file.mimeType, size: file.bytes.byteLength },
      ...(file.caption !== undefined ? { body: file.caption, filename: file.name } : { body: file.name })
    })
  }

  /** Every m.room.message text of the room, oldest first. */
  async messages(roomId: string): Promise<Array<RoomMessage>> {
    const out: Array<RoomMessage> = []
    let from: string | undefined
    while (true) {
      const q = new URLSearchParams({ dir: "b", limit: "1000", ...(from ? { from } : {}) })
      const r = await this.req("GET", `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/messages?${q}`)
      for (const e of r.chunk ?? []) {
        if (e.type === "m.room.message" && typeof e.content?.body === "string") {
          out.push({ eventId: e.event_id, sender: e.sender, msgtype: String(e.content.msgtype), body: e.content.body, ...(typeof e.content.formatted_body === "string" ? { formattedBody: e.content.formatted_body } : {}) })
        }
      }
      if (!r.end || (r.chunk ?? []).length === 0) break
      from = r.end
    }
    return out.reverse()
  }

  /** Waits until the room holds a message matching `predicate` and returns it. */
  awaitMessage(roomId: string, predicate: (m: RoomMessage) => boolean): Promise<RoomMessage> {
    return Effect.runPromise(eventually(async () => (await this.messages(roomId)).find(predicate), { label: `a matching message in ${roomId}` }))
  }
}

export interface Synapse {
  readonly baseUrl: string
  readonly port: number
  readonly dataDir: string
  /** Registers a user through the shared-secret admin API and logs in. */
  register(localpart: string, password?: string): Promise<MatrixUser>
  /** Stops the homeserver (state kept); `start` brings it back on the same port. */
  stop(): void
  start(): void
}

/** Starts Synapse in a fresh data folder on a free port. Stop it with `stop()` (e.g. in afterAll). */
export const startSynapse = async (): Promise<Synapse> => {
  const port = await freePort()
  const dataDir = tempDir()
  const baseUrl = `http://127.0.0.1:${port}`
  const start = () => {
    execFileSync("bash", [SCRIPT, "start", dataDir, String(port)], { stdio: ["ignore", "pipe", "pipe"], timeout: 90_000 })
  }
  const stop = () => {
    execFileSync("bash", [SCRIPT, "stop", dataDir], { stdio: "ignore", timeout: 30_000 })
  }
  start()
  const secret = fs.readFileSync(path.join(dataDir, "shared-secret"), "utf8").trim()
  const register = async (localpart: string, password: string = `pw-${randomUUID()}`) => {
    const { nonce } = await call(baseUrl, "GET", "/_synapse/admin/v1/register")
    const mac = createHmac("sha1", secret).update(`${nonce}\0${localpart}\0${password}\0notadmin`).digest("hex")
    const r = await call(baseUrl, "POST", "/_synapse/admin/v1/register", { nonce, username: localpart, password, admin: false, mac })
    return new MatrixUser(baseUrl, r.user_id, r.access_token, password)
  }
  return { baseUrl, port, dataDir, register, stop, start }
}
