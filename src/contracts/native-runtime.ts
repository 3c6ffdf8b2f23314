/**
 * The Effect-native shape of a connection runtime, for the built-ins (HTTP API, Matrix). The
 * Promise contract of connection-runtime-contract.ts stays the one for third-party plugins; it is
 * run through `fromPromise`, so ConnectionRuntimes drives one shape only.
 *
 * A native runtime starts inside a scope of its own: what it acquires (a listening server, a
 * forked loop) is released when ConnectionRuntimes closes that scope, newest runtime first. Its
 * loops fork into that scope (`Effect.forkScoped`), so they run in the host's runtime: the host's
 * logger and tracer apply, and a defect is logged rather than swallowed.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import { Data, Effect, Schema, type Scope } from "effect"
import type { DeliveryStore } from "../db/DeliveryStore.js"
import type { NativeChannel } from "./channel.js"
import type { PublicUrl } from "./public-url.js"
import type { ConnectionRuntime, ConnectionRuntimeContext, IngestMessageInput, IngestResult } from "./connection-runtime.js"

/** A host callback a connection runtime called failed; the runtime's Promise rejects with this. */
export class ContextCallFailed extends Schema.TaggedError<ContextCallFailed>()("ContextCallFailed", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}
import type { PlaceOwnerStore } from "../db/PlaceOwnerStore.js"

/** What a built-in runtime may talk through; ConnectionRuntimes requires it of the host stack. */
export type NativeRuntimeServices = HttpClient.HttpClient | DeliveryStore | PlaceOwnerStore | PublicUrl

/** The host-owned context, as Effects (the same operations as the Promise context). */
export interface NativeRuntimeContext {
  /** Durable ingest (receipt, fingerprint, message, cursor in one transaction); succeeds after commit. */
  readonly ingest: (input: IngestMessageInput) => Effect.Effect<IngestResult, ContextCallFailed>
  /**
   * A page of the provider's backlog in one group commit, in order (the last cursor given is
   * kept); succeeds once all have committed. A refused payload fails the call after the others
   * have committed, so a retry of the page finds them as duplicates.
   */
  readonly ingestMany: (inputs: ReadonlyArray<IngestMessageInput>) => Effect.Effect<ReadonlyArray<IngestResult>, ContextCallFailed>
  /** The durable cursor of (connection, stream), null before the first one. */
  readonly cursor: (connection: string, stream: string) => Effect.Effect<{ readonly position: string; readonly order: number } | null, ContextCallFailed>
  /** Binds the outbound channel of the runtime's connection; removed when the runtime closes. */
  readonly bindChannel: (channel: NativeChannel) => Effect.Effect<void>
  /** The enabled routes of a connection, from config. */
  readonly routes: (connection: string) => ReadonlyArray<{ readonly place: string; readonly workspace: string; readonly trigger?: string }>
  /** The same context with Promises, for a plugin's runtime (`fromPromise`). */
  readonly promise: ConnectionRuntimeContext
}

export const NativeRuntimeTypeId: unique symbol = Symbol.for("pynchy/NativeConnectionRuntime")

export interface NativeConnectionRuntime {
  readonly [NativeRuntimeTypeId]: typeof NativeRuntimeTypeId
  /** Unique across all plugins. */
  readonly name: string
  /**
   * Succeeds once the runtime is started (its loops forked into the scope); closing the scope
   * stops it. A failure's message is reported as `start_failed`, and the scope is closed.
   */
  readonly start: (context: NativeRuntimeContext) => Effect.Effect<void, { readonly message: string }, Scope.Scope | NativeRuntimeServices>
  /** Live provider-loop health, not merely "start succeeded once". */
  readonly isReady: Effect.Effect<boolean>
}

export const native = (runtime: Omit<NativeConnectionRuntime, typeof NativeRuntimeTypeId>): NativeConnectionRuntime => ({
  [NativeRuntimeTypeId]: NativeRuntimeTypeId,
  ...runtime
})

export const isNative = (u: unknown): u is NativeConnectionRuntime =>
  typeof u === "object" && u !== null && NativeRuntimeTypeId in u

/** A runtime a plugin contributed: either shape. */
export type AnyConnectionRuntime = ConnectionRuntime | NativeConnectionRuntime

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** A plugin's Promise runtime rejected (or threw) in `start` or `close`; the reason is its message. */
export class PromiseRuntimeFailed extends Data.TaggedError("PromiseRuntimeFailed")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * A plugin's Promise runtime in the native shape. `close()` is registered before `start()` is
 * called, so a runtime whose start failed or timed out is closed too (the seed's rule). A
 * rejected close is a defect of the scope's close, which ConnectionRuntimes reports as
 * `close_failed`; a throwing `isReady()` counts as not ready.
 */
export const fromPromise = (runtime: ConnectionRuntime): NativeConnectionRuntime =>
  native({
    name: runtime.name,
    start: (context) =>
      Effect.gen(function* () {
        yield* Effect.addFinalizer(() =>
          Effect.tryPromise({ try: () => runtime.close(), catch: (e) => new PromiseRuntimeFailed({ reason: describe(e) }) }).pipe(Effect.orDie)
        )
        yield* Effect.tryPromise({ try: () => runtime.start(context.promise), catch: (e) => new PromiseRuntimeFailed({ reason: describe(e) }) })
      }),
    isReady: Effect.sync(() => {
      try {
        return runtime.isReady() === true
      } catch {
        return false
      }
    })
  })

export const asNative = (runtime: AnyConnectionRuntime): NativeConnectionRuntime => (isNative(runtime) ? runtime : fromPromise(runtime))
