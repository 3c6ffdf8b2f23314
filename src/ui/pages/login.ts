import { html } from "../html.js"
import { page } from "./layout.js"

/** The login form: the token goes in the POST body, never in a URL. */
export const loginPage = (error?: string) =>
  page({ title: "Log in" }, html`<section class="login"><h1>Log in</h1>
${error !== undefined ? html`<p class="error" role="alert">${error}</p>` : ""}
<form method="post" action="/login">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button>
</form>
<p class="hint">The token whose SHA-256 digest is under <code>ui.tokens</code> (or <code>ui.tokensFile</code>) in pynchy.yaml.</p>
</section>`)
