// A small MCP server over stdio with no dependencies: newline-delimited JSON-RPC, the protocol the
// official SDK's stdio transport speaks. Notes are lines of NOTES_FILE (default ./notes.txt, in
// the folder the host starts it in: its data dir).
import * as fs from "node:fs"

const file = process.env.NOTES_FILE ?? "notes.txt"
const tools = [
  { name: "add_note", description: "Saves a note.", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
  { name: "list_notes", description: "Lists the saved notes, oldest first.", inputSchema: { type: "object", properties: {} } }
]
const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError: true } : {}) })
const notes = () => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : [])

const call = (name, args) => {
  if (name === "add_note") {
    if (typeof args.text !== "string" || args.text.trim() === "") return text("text must be a non-empty string", true)
    fs.appendFileSync(file, `${args.text.replace(/\n/g, " ")}\n`)
    return text(`saved (${notes().length} notes)`)
  }
  if (name === "list_notes") return text(notes().map((n, i) => `${i + 1}. ${n}`).join("\n") || "no notes yet")
  return text(`no tool ${name}`, true)
}

const send = (m) => process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`)
let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  let nl
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, nl).trim()
    buffer = buffer.slice(nl + 1)
    if (line === "") continue
    const m = JSON.parse(line)
    if (m.id === undefined) continue
    if (m.method === "initialize") send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "notes", version: "0.1.0" } } })
    else if (m.method === "tools/list") send({ id: m.id, result: { tools } })
    else if (m.method === "tools/call") send({ id: m.id, result: call(m.params.name, m.params.arguments ?? {}) })
    else if (m.method === "ping") send({ id: m.id, result: {} })
    else send({ id: m.id, error: { code: -32601, message: "method not found" } })
  }
})
process.stdin.on("end", () => process.exit(0))
