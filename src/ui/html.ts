/**
 * Server-rendered HTML: a template tag that escapes every interpolated value unless it is Html
 * already (built by this tag), so text from a message, a reply or a config can never become markup.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

export class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }
export const escape = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

type Part = Html | string | number | boolean | null | undefined | ReadonlyArray<Part>

const render = (p: Part): string =>
  p === null || p === undefined || p === false ? "" : p instanceof Html ? p.value : Array.isArray(p) ? p.map(render).join("") : escape(String(p))

export const html = (strings: TemplateStringsArray, ...parts: ReadonlyArray<Part>): Html =>
  new Html(strings.reduce((out, s, i) => out + s + (i < parts.length ? render(parts[i]!) : ""), ""))

/** A time as `YYYY-MM-DD HH:MM:SS` UTC. */
export const time = (ms: number | null | undefined): string => (ms === null || ms === undefined ? "—" : new Date(ms).toISOString().replace("T", " ").slice(0, 19))

/** A full page as the response. */
export const htmlResponse = (body: string, status = 200) => HttpServerResponse.text(body, { status, contentType: "text/html; charset=utf-8" })
