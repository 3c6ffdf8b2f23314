/**
 * An MCP tool server a workspace may use: `where: sandbox` starts it inside each turn's sandbox
 * (no network, only /workspace), `where: host` once on the host, shared, its calls under host
 * policy. The same shape comes from `mcpServers:` in pynchy.yaml and from plugins' `mcpServerSpec`.
 */
import { Schema } from "effect"

/** Server names prefix tool names (`<server>__<tool>`), so they hold no `_`. */
export const McpServerName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/, { message: () => "must be 1-32 letters, digits or '-' (no '_': tools are offered as <server>__<tool>)" })
)

const EnvName = Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: () => "must be an environment variable name" }))

export class McpServerSpec extends Schema.Class<McpServerSpec>("McpServerSpec")({
  name: McpServerName,
  /** The program; `node` is the node running the host (or the runner, in the sandbox). */
  command: Schema.NonEmptyTrimmedString,
  args: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  /** Names of host environment variables passed to the server (values are never in config). */
  env: Schema.optionalWith(Schema.Array(EnvName), { default: () => [] }),
  where: Schema.Literal("sandbox", "host"),
  /** The tools offered (by the server's names); all of them when unset. */
  tools: Schema.optional(Schema.Array(Schema.NonEmptyString)),
  /** The risk tier of a host server's calls (policy as for host actions: `high` asks a human). */
  risk: Schema.optionalWith(Schema.Literal("low", "medium", "high"), { default: () => "medium" }),
  /** The deadline of starting and of each call. */
  timeoutSeconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 600)), { default: () => 30 })
}) {}

/** Why a call of an MCP tool gave no answer (the code the model reads). */
export const McpFailureCode = Schema.Literal(
  "mcp_start_failed",
  "mcp_start_timeout",
  "mcp_call_timeout",
  "mcp_server_exited",
  "mcp_call_failed",
  "mcp_unknown_tool",
  "mcp_tool_error"
)
export type McpFailureCode = typeof McpFailureCode.Type
