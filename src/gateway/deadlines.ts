/**
 * Timeouts of one fixed length, without a timer per request. Deadlines of equal length arrive in
 * the order they were set, so they form a queue; one fiber sleeps on the Effect Clock until the
 * oldest live one (TestClock drives it in tests). Cancelling is a flag; done entries are dropped
 * as the head passes them, so the queue holds about what is in flight.
 */
import { Duration, Effect } from "effect"

const noop = () => undefined

export class Deadline {
  done = false
  constructor(readonly at: number, public fire: () => void) {}
  /** The guarded work finished first; drops the callback so a waiting entry holds nothing. */
  clear(): void {
    this.done = true
    this.fire = noop
  }
}

export class Deadlines {
  private items: Array<Deadline> = []
  private head = 0
  private wake: (() => void) | undefined

  constructor(private readonly ms: number, private readonly now: () => number) {}

  /** Calls `fire` after `ms` unless the returned deadline is marked done first. */
  add(fire: () => void): Deadline {
    const d = new Deadline(this.now() + this.ms, fire)
    this.compact()
    this.items.push(d)
    if (this.wake) {
      const wake = this.wake
      this.wake = undefined
      wake()
    }
    return d
  }

  private compact() {
    while (this.head < this.items.length && this.items[this.head]!.done) this.head++
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }

  /** The one fiber: fork it in the owner's scope. */
  readonly run: Effect.Effect<never> = Effect.gen(this, function* () {
    while (true) {
      this.compact()
      if (this.head === this.items.length) {
        yield* Effect.async<void>((resume) => {
          this.wake = () => resume(Effect.void)
          return Effect.sync(() => {
            this.wake = undefined
          })
        })
        continue
      }
      const first = this.items[this.head]!
      const wait = first.at - this.now()
      if (wait > 0) {
        yield* Effect.sleep(Duration.millis(wait))
        continue
      }
      const fire = first.fire
      first.clear()
      fire()
    }
  })
}
