/** A fetch client for the HTTP API tests: bearer token, JSON answers. */
import { Effect } from "effect"

export const call = (url: string, init: RequestInit & { token?: string | null }, defaultToken: string) =>
  Effect.promise(async () => {
    const { token = defaultToken, ...rest } = init
    const headers = new Headers(rest.headers)
    if (token !== null) headers.set("authorization", `Bearer ${token}`)
    const res = await fetch(url, { ...rest, headers })
    const text = await res.text()
    return { status: res.status, body: text === "" ? undefined : JSON.parse(text) }
  })

export const post = (base: string, place: string, body: unknown, headers: Record<string, string>, token: string) =>
  call(`${base}/v1/conversations/${encodeURIComponent(place)}/messages`, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
    headers: { "content-type": "application/json", ...headers }
  }, token)
