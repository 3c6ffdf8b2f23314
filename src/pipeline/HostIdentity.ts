import { Context, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { HostEpoch } from "../domain/ids.js"
import { VERSION } from "../version.js"

export declare namespace HostIdentity {
  /** Who this process is: the epoch is new at every start and fences turn ownership. */
  export interface Service {
    readonly epoch: HostEpoch
    readonly pid: number
    readonly version: string
  }
}

export class HostIdentity extends Context.Tag("pynchy/HostIdentity")<HostIdentity, HostIdentity.Service>() {
  static readonly layer = Layer.sync(HostIdentity, () => ({
    epoch: HostEpoch.make(`${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`),
    pid: process.pid,
    version: VERSION
  }))
}
