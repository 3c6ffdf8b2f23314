import type { Attachment } from "../../domain/attachment.js"

/**
 * One line for a current attachment and its last normalized status, the words of the contract:
 * `conv → runtime/session: stale (alive, last event …)`, or why it could not be read.
 */
export const attachmentLine = (a: Attachment): string => {
  const target = `${a.conversationId} → ${a.runtimeId}/${a.sessionId}`
  const s = a.lastStatus
  if (s === null) return `${target}: not observed yet`
  const facts = [
    s.error === undefined ? undefined : s.error.code,
    s.alive === undefined ? undefined : s.alive ? "alive" : "not alive",
    s.lastEventAt === undefined ? undefined : `last event ${new Date(s.lastEventAt).toISOString()}`,
    `read ${new Date(s.reconciledAt).toISOString()}`
  ].filter((f) => f !== undefined)
  return `${target}: ${s.state} (${facts.join(", ")})`
}
