"use strict";
// Human play: draws the messages a model would receive this turn (text and frames, in order)
// and sends the player's key press as the turn's action. Message text is set as textContent.
// A served study's page comes without a token: the player accepts the consent line, and the
// server issues a session (kept in this tab's sessionStorage, so a reload goes on playing).
(function () {
  let token = document.querySelector("meta[name='play-token']").content;
  const serving = token === "";
  const KEPT = "gridbench-play-token";
  const KEYS = JSON.parse(document.getElementById("keys").textContent);
  const byKey = {};
  for (const action in KEYS) for (const k of KEYS[action]) byKey[k.length === 1 ? k.toLowerCase() : k] = action;
  const $ = (id) => document.getElementById(id);
  const NAMES = { ArrowLeft: "←", ArrowRight: "→", ArrowUp: "↑" };
  let view = { version: 0, phase: "starting" };
  let sent = false;

  const legend = $("keys-legend");
  for (const action in KEYS) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "key";
    b.dataset.action = action;
    const k = document.createElement("kbd");
    k.textContent = KEYS[action].map((x) => NAMES[x] || x.toUpperCase()).join(" / ");
    b.append(k, " " + action);
    b.addEventListener("click", () => act(action));
    legend.appendChild(b);
  }

  function api(path, options) {
    return fetch(path, Object.assign({ cache: "no-store" }, options, {
      headers: Object.assign({ "X-Play-Token": token, "Content-Type": "application/json" }, (options || {}).headers),
    }));
  }

  function draw() {
    const n = view.maze_count || 0;
    const playing = view.phase === "turn" || view.phase === "waiting";
    const of = n ? " of " + n : "";
    $("where").textContent = playing ? "maze " + (view.maze_index + 1) + of : "";
    $("who").textContent = view.participant ? "participant " + view.participant : "";
    document.body.dataset.phase = view.phase;
    document.body.dataset.version = String(view.version);
    const finished = view.finished || [];
    if (finished.length && playing && finished.length === view.maze_index) {
      const f = finished[finished.length - 1];
      $("banner").hidden = false;
      $("banner").textContent = "Maze " + finished.length + " is over (" + f.termination.replace("_", " ") + " after "
        + f.steps + " steps). This is maze " + (view.maze_index + 1) + of + ".";
    } else {
      $("banner").hidden = true;
    }
    if (view.phase === "done" || view.phase === "stopped") {
      $("messages").replaceChildren();
      $("status").textContent = view.message
        ? view.message + " " + finished.length + " finished game(s) saved. You can close this page."
        : (view.phase === "done" ? "All " + n + " mazes played. " : "Stopped. ")
          + finished.length + " finished game(s) saved in " + view.run_dir + ". You can close this page.";
      legend.hidden = true;
      $("stop").hidden = true;
      return;
    }
    if (view.phase === "queued") {
      $("messages").replaceChildren();
      $("status").textContent = view.message;
      return;
    }
    if (view.phase !== "turn") return;
    const box = $("messages");
    box.replaceChildren();
    for (const m of view.messages) {
      const div = document.createElement("section");
      div.className = "msg " + m.role;
      for (const p of m.parts) {
        if (p.type === "image") {
          const img = document.createElement("img");
          img.src = p.src;
          img.alt = "frame";
          div.appendChild(img);
        } else {
          const pre = document.createElement("pre");
          pre.textContent = p.text;
          div.appendChild(pre);
        }
      }
      box.appendChild(div);
    }
    $("status").textContent = "";
    sent = false;
    // the current frame and the request come last in the prompt: bring them into view once the
    // frames are decoded (before that the page does not know its own height)
    const shown = view.version;
    Promise.all(Array.from(box.querySelectorAll("img"), (img) => img.decode().catch(() => null))).then(() => {
      if (view.version === shown) window.scrollTo(0, document.body.scrollHeight);
    });
  }

  async function act(action) {
    if (view.phase !== "turn" || sent) return;
    sent = true;
    $("status").textContent = action + "…";
    const r = await api("/api/act", { method: "POST", body: JSON.stringify({ action, version: view.version }) });
    if (!r.ok) { sent = false; $("status").textContent = "not taken (" + r.status + ")"; }
  }

  document.addEventListener("keydown", (ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const action = byKey[ev.key.length === 1 ? ev.key.toLowerCase() : ev.key];
    if (!action) return;
    ev.preventDefault();
    act(action);
  });
  $("stop").addEventListener("click", () => api("/api/stop", { method: "POST", body: "{}" }));

  function askConsent(why) {
    token = "";
    sessionStorage.removeItem(KEPT);
    $("where").textContent = "";
    $("consent").hidden = false;
    legend.hidden = $("stop").hidden = true;
    $("status").textContent = why || "";
  }

  $("agree").addEventListener("click", async () => {
    $("agree").disabled = true;
    try {
      const r = await fetch("/api/join", { method: "POST", cache: "no-store", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ consent: true }) });
      if (r.ok) {
        token = (await r.json()).token;
        sessionStorage.setItem(KEPT, token);
        view = { version: 0, phase: "starting" };  // a new session's board counts from 0
        $("consent").hidden = true;
        legend.hidden = $("stop").hidden = false;
        $("status").textContent = "";
        poll();
      } else {
        $("status").textContent = r.status === 503 ? "Too many players right now: please try again in a minute."
          : "not taken (" + r.status + ")";
      }
    } finally {
      $("agree").disabled = false;
    }
  });

  async function poll() {
    for (;;) {
      try {
        const r = await api("/api/state?after=" + view.version);
        if (r.status === 403 && serving) { askConsent("Your session has ended: agree again to play on."); return; }
        if (!r.ok) throw new Error(String(r.status));
        const next = await r.json();
        if (next.version > view.version) { view = next; draw(); }
        if (view.phase === "done" || view.phase === "stopped") return;
      } catch (e) {
        $("status").textContent = "the game server is not answering";
        await new Promise((res) => setTimeout(res, 1000));
      }
    }
  }
  if (serving) token = sessionStorage.getItem(KEPT) || "";
  if (token) poll(); else askConsent();
})();
