/**
 * The `files:` section: what a user may send in (saved to the workspace inbox) and what an agent
 * may send out (from the workspace outbox), per message or reply (docs/channels.md "Files in and out").
 */
import { Schema } from "effect"

/** A MIME type (`application/pdf`) or a family (`image/*`). */
const MimePattern = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9.+-]*\/(\*|[a-z0-9][a-z0-9.+-]*)$/, { message: () => "must be a MIME type like 'application/pdf' or a family like 'image/*'" })
)

export class FilesConfig extends Schema.Class<FilesConfig>("FilesConfig")({
  /** Largest file, in bytes (default 20 MiB). */
  maxBytes: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1_073_741_824)), { default: () => 20 * 1024 * 1024 }),
  /** Most files per message in, and per reply out. */
  maxFiles: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 100)), { default: () => 10 }),
  /** The types taken in and sent out. */
  types: Schema.optionalWith(Schema.Array(MimePattern), { default: () => ["image/*", "application/pdf", "text/*", "audio/*"] }),
  /** Days a file saved in a workspace inbox is kept (0: kept until the agent or the user removes it). */
  inboxRetentionDays: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 36_500)), { default: () => 30 })
}) {}
