import { assert, describe, it } from "vitest"
import { formattedContent, toMatrixHtml } from "../../src/channels/matrix/html.js"

describe("Markdown as Matrix HTML", () => {
  it("marks up bold, italic, strike, inline code and safe links; escapes everything else", () => {
    assert.strictEqual(
      toMatrixHtml("**b** _i_ ~~s~~ `x<y` [ok](https://a.b/?c=1&d=2) [no](javascript:alert(1)) <script>"),
      `<strong>b</strong> <em>i</em> <del>s</del> <code>x&lt;y</code> <a href="https://a.b/?c=1&amp;d=2">ok</a> [no](javascript:alert(1)) &lt;script&gt;`
    )
  })

  it("keeps code blocks literal with their language, headings by level, and line breaks", () => {
    assert.strictEqual(
      toMatrixHtml("## Plan\nfirst **step**\nsecond\n```ts\nconst a = 1 < 2 && **no**\n```"),
      `<h2>Plan</h2>first <strong>step</strong><br>second<pre><code class="language-ts">const a = 1 &lt; 2 &amp;&amp; **no**</code></pre>`
    )
  })

  it("leaves words with underscores and products with stars alone", () => {
    assert.strictEqual(toMatrixHtml("snake_case_name and 2*3*4"), "snake_case_name and 2*3*4")
  })

  it("adds formatted_body only when the text has markup", () => {
    assert.deepStrictEqual(formattedContent("plain words, a < b"), {})
    assert.deepStrictEqual(formattedContent("**yes**"), { format: "org.matrix.custom.html", formatted_body: "<strong>yes</strong>" })
  })
})
