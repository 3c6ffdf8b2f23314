/**
 * The Control UI's two assets, served by the host from memory (no build step, nothing fetched at
 * run time). The script is small and optional: every form also works as a plain POST.
 *
 * What it does: the chat form posts without a reload (urlencoded, with the page's CSRF token) and
 * the chat follows `/chat/<place>/stream` (EventSource): streamed text (`delta`) shows as it comes
 * and the reply (`reply`) replaces it. A page marked `data-live` re-reads its `<main>` when
 * `/live` says something changed.
 */
export const UI_CSS = `
:root { color-scheme: light dark; --fg: #1d2330; --bg: #f7f7f5; --muted: #6a7080; --line: #d9dbe0; --accent: #3b6ea8; --ok: #2f7d4a; --bad: #b3362f; --wait: #a2700f; }
@media (prefers-color-scheme: dark) { :root { --fg: #e4e6eb; --bg: #15181e; --muted: #9aa0ad; --line: #2c313b; --accent: #7aa7dc; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
header .brand { font-weight: 700; }
header nav { display: flex; gap: 1rem; flex: 1; flex-wrap: wrap; }
a { color: var(--accent); }
nav a[aria-current] { font-weight: 700; text-decoration: none; }
.logout { margin: 0; } .user { color: var(--muted); }
main { padding: 1rem 1.2rem; max-width: 72rem; }
h1 small { color: var(--muted); font-weight: 400; font-size: .6em; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1.2rem; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td.text, .text { white-space: pre-wrap; word-break: break-word; }
.ok, .status-completed, .status-approved, .status-consumed { color: var(--ok); }
.failed, .status-failed, .status-denied, .status-expired { color: var(--bad); }
.status-pending, .status-running, .status-queued { color: var(--wait); }
.error { color: var(--bad); } .notice { color: var(--ok); } .hint { color: var(--muted); }
button { font: inherit; padding: .3rem .8rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); cursor: pointer; }
button:hover { border-color: var(--accent); }
input, textarea { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 4px; background: transparent; color: var(--fg); }
form.inline { display: inline; }
.login { max-width: 22rem; margin: 3rem auto; } .login form { display: grid; gap: .6rem; }
.places { display: flex; gap: .8rem; align-items: center; flex-wrap: wrap; margin-bottom: .8rem; }
.chat { list-style: none; padding: 0; margin: 0 0 1rem; display: grid; gap: .5rem; }
.line { padding: .5rem .7rem; border: 1px solid var(--line); border-radius: 6px; max-width: 48rem; }
.line.you { justify-self: end; border-color: var(--accent); }
.line.notice { border-style: dashed; }
.line.streaming .text::after { content: "▍"; color: var(--muted); }
.line .who { font-size: .8em; color: var(--muted); display: block; }
.line .at { font-size: .75em; color: var(--muted); }
.send { display: flex; gap: .5rem; align-items: flex-start; } .send textarea { flex: 1; }
.trace { list-style: none; padding: 0; } .step { padding: .3rem .5rem; border-left: 3px solid var(--line); margin-bottom: .3rem; }
.step.ok { border-color: var(--ok); } .step.failed { border-color: var(--bad); } .step.waiting { border-color: var(--wait); }
.step .at { color: var(--muted); font-size: .85em; }
.verdict { padding: .5rem .7rem; border: 1px solid var(--line); border-radius: 6px; }
.chart svg { width: 100%; max-width: 44rem; height: auto; } .chart text { font-size: 10px; fill: var(--muted); }
.chart .key { margin-right: 1rem; }
`

export const UI_JS = `"use strict";
(function () {
  var csrfMeta = document.querySelector('meta[name="csrf"]');
  var csrf = csrfMeta ? csrfMeta.getAttribute("content") : "";

  function lineFor(chat, key, who) {
    var li = key ? chat.querySelector('li[data-key="' + CSS.escape(key) + '"]') : null;
    if (!li) {
      li = document.createElement("li");
      li.className = "line " + who;
      if (key) li.setAttribute("data-key", key);
      var w = document.createElement("span"); w.className = "who"; w.textContent = who;
      var t = document.createElement("span"); t.className = "text";
      li.appendChild(w); li.appendChild(t);
      chat.appendChild(li);
    }
    return li;
  }

  var chat = document.getElementById("chat");
  if (chat && chat.dataset.stream && window.EventSource) {
    var source = new EventSource(chat.dataset.stream);
    source.addEventListener("delta", function (e) {
      var d = JSON.parse(e.data);
      var li = lineFor(chat, d.key, "assistant");
      li.classList.add("streaming");
      li.querySelector(".text").textContent += d.text;
      li.scrollIntoView({ block: "end" });
    });
    source.addEventListener("reply", function (e) {
      var r = JSON.parse(e.data);
      var li = lineFor(chat, r.key, r.kind === "notice" ? "notice" : "assistant");
      li.classList.remove("streaming");
      li.classList.add("done");
      li.querySelector(".text").textContent = r.text;
      li.scrollIntoView({ block: "end" });
    });
  }

  var send = document.getElementById("send");
  if (send && window.fetch) {
    send.addEventListener("submit", function (e) {
      e.preventDefault();
      var status = send.querySelector(".status");
      var text = send.elements.namedItem("text");
      var body = new URLSearchParams();
      body.set("csrf", csrf);
      body.set("key", crypto.randomUUID());
      body.set("text", text.value);
      status.textContent = "sending…";
      fetch(send.action, { method: "POST", body: body, headers: { accept: "application/json" }, credentials: "same-origin" })
        .then(function (res) { return res.json().then(function (j) { return { ok: res.ok, body: j }; }); })
        .then(function (r) {
          if (!r.ok) { status.textContent = r.body.message || r.body.error || "not sent"; return; }
          var li = lineFor(chat, null, "you");
          li.querySelector(".text").textContent = text.value;
          li.setAttribute("data-message", String(r.body.messageId));
          text.value = "";
          status.textContent = "";
        })
        .catch(function () { status.textContent = "not sent (the host did not answer)"; });
    });
    send.elements.namedItem("text").addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send.requestSubmit(); }
    });
  }

  var live = document.body.dataset.live;
  if (live && window.EventSource) {
    var timer = null;
    var refresh = function () {
      timer = null;
      fetch(location.href, { credentials: "same-origin" }).then(function (res) { return res.text(); }).then(function (text) {
        var next = new DOMParser().parseFromString(text, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (next && main) main.replaceWith(next);
      });
    };
    new EventSource(live).addEventListener("change", function () {
      if (timer === null) timer = setTimeout(refresh, 200);
    });
  }
})();
`
