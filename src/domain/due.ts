import { Cron, DateTime, Either, Option } from "effect"

/** When a task falls due: a cron expression in a zone, a fixed interval from an anchor, or once. */
export type Recurrence =
  | { readonly _tag: "Cron"; readonly cron: Cron.Cron }
  | { readonly _tag: "Every"; readonly anchor: number; readonly everyMs: number }
  | { readonly _tag: "Once"; readonly at: number }

/** The host's zone, the default of a schedule without `timezone`. */
export const hostTimeZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"

/** An IANA zone name the runtime knows. */
export const isKnownZone = (zone: string): boolean => Option.isSome(DateTime.zoneMakeNamed(zone))

/** 5 fields (minute precision) or 6 (seconds first), read in `zone`; the reason when it is not one. */
export const parseCron = (expression: string, zone: string): Either.Either<Cron.Cron, string> => {
  const fields = expression.trim().split(/\s+/).length
  if (fields !== 5 && fields !== 6) return Either.left(`expected 5 or 6 cron fields, got ${fields}`)
  if (!isKnownZone(zone)) return Either.left(`unknown time zone '${zone}'`)
  return Either.mapLeft(Cron.parse(expression, zone), (e) => `${e.message}${e.input ? ` ('${e.input}')` : ""}`)
}

/** The first due time strictly after `after` (epoch millis), or none (a one-shot already past). */
export const nextDue = (r: Recurrence, after: number): number | null => {
  switch (r._tag) {
    case "Cron":
      return Cron.next(r.cron, after).getTime()
    case "Every": {
      if (after < r.anchor) return r.anchor
      return r.anchor + (Math.floor((after - r.anchor) / r.everyMs) + 1) * r.everyMs
    }
    case "Once":
      return r.at > after ? r.at : null
  }
}

/** The latest due time at or before `now`, not earlier than `from` (the stored due time); none if `from` is later. */
export const latestDue = (r: Recurrence, from: number, now: number): number | null => {
  if (from > now) return null
  switch (r._tag) {
    case "Cron": {
      // `prev` is strictly before the second it is given: ask from the next second, step back once if that overshoots.
      let prev = Cron.prev(r.cron, now + 1_000).getTime()
      if (prev > now) prev = Cron.prev(r.cron, prev).getTime()
      return Math.max(prev, from)
    }
    case "Every":
      return Math.max(from, r.anchor + Math.floor((now - r.anchor) / r.everyMs) * r.everyMs)
    case "Once":
      return from
  }
}

/** The shortest gap between two consecutive due times over the next few, for the interval floor. */
export const shortestGapMs = (r: Recurrence, from: number, samples = 64): number => {
  if (r._tag === "Once") return Infinity
  if (r._tag === "Every") return r.everyMs
  let prev = nextDue(r, from)!
  let gap = Infinity
  for (let i = 0; i < samples; i++) {
    const n = nextDue(r, prev)!
    gap = Math.min(gap, n - prev)
    prev = n
  }
  return gap
}

/** `90s`, `30m`, `1h`, `2d` as milliseconds. */
export const parseWindow = (text: string): number | null => {
  const m = /^(\d+)\s*([smhd])$/.exec(text.trim())
  if (m === null) return null
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"]
  return Number(m[1]) * unit
}
