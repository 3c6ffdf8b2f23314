/** The `files:` section decodes with its defaults, and a bad value is named by its field. */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { fileLines } from "../../src/files/inbox.js"
import { mimeTypeOf, safeName, typeAllowed } from "../../src/files/names.js"

describe("files config and names", () => {
  it("defaults: 20 MiB, 10 files, images, PDF, text and audio", () => {
    const config = Either.getOrThrow(decodeConfig({}, "test"))
    assert.strictEqual(config.files.maxBytes, 20 * 1024 * 1024)
    assert.strictEqual(config.files.maxFiles, 10)
    assert.deepStrictEqual(config.files.types, ["image/*", "application/pdf", "text/*", "audio/*"])
  })

  it("a bad limit or type is refused naming its field", () => {
    const bad = decodeConfig({ files: { maxBytes: 0, maxFiles: 1, types: ["pdf"] } }, "test")
    assert.isTrue(Either.isLeft(bad))
    const text = Either.isLeft(bad) ? JSON.stringify(bad.left) : ""
    assert.match(text, /files/)
    assert.match(text, /maxBytes/)
    assert.match(text, /types/)
  })

  it("names are one safe segment; types match exactly or by family", () => {
    for (const hostile of ["../../etc/passwd", ".bashrc", "..", "a/b\\c", "\u0000x", "x".repeat(300)]) {
      const s = safeName(hostile)
      assert.notInclude(s, "/")
      assert.notInclude(s, "\\")
      assert.notStrictEqual(s[0], ".")
      assert.isAtMost(s.length, 60)
      assert.isAbove(s.length, 0)
    }
    assert.strictEqual(mimeTypeOf("Report.PDF"), "application/pdf")
    assert.strictEqual(mimeTypeOf("noext"), "application/octet-stream")
    assert.isTrue(typeAllowed("image/png", ["image/*"]))
    assert.isTrue(typeAllowed("text/plain; charset=utf-8", ["text/plain"]))
    assert.isFalse(typeAllowed("application/x-sh", ["image/*", "text/*"]))
  })

  it("the agent's file lines skip metadata that is not of the host's shape", () => {
    assert.deepStrictEqual(fileLines({ files: [{ path: "/workspace/inbox/c/x", type: "text/plain", size: 3 }, "junk", null, { path: 1 }], filesRefused: [{ name: "y", reason: "too large" }] }), [
      "[file: /workspace/inbox/c/x (text/plain, 3 bytes)]",
      "[file not received: y: too large]"
    ])
  })
})
