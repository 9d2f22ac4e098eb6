"use strict";
// One episode: frame per step (loaded when shown), the reply and reasoning of that step, the
// activity summary the model was shown, the event log, the distance chart, overlays.
// Everything from the trace goes on screen through textContent: a reply is text, never markup.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const ep = data.episode, steps = data.steps, n = steps.length;
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const DIRS = ["east", "south", "west", "north"];
  const fmt = (v) => v === null || v === undefined || v === "" ? "–" : typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v);

  function facts(dl, pairs) {
    dl.replaceChildren();
    for (const [k, v] of pairs) {
      const dt = document.createElement("dt"); dt.textContent = k;
      const dd = document.createElement("dd"); dd.textContent = fmt(v);
      const pair = document.createElement("div");  // keeps a name and its value on one line
      pair.append(dt, dd);
      dl.appendChild(pair);
    }
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }

  // ---- header --------------------------------------------------------------------------
  $("title").textContent = (ep.model_name || ep.model) + " on " + ep.maze_id + " (" + ep.condition + ")";
  facts($("facts"), [
    ["model", ep.model], ["condition", ep.condition], ["repeat", ep.repeat], ["maze", ep.maze_id],
    ["grid", ep.grid], ["category", ep.category], ["termination", ep.termination],
    ["solved", ep.solved ? "yes" : "no"], ["steps", ep.steps], ["optimal", ep.optimal_actions],
    ["step cap", ep.step_cap], ["progress", ep.progress_action], ["closest", ep.closest_action],
    ["invalid", ep.invalid_outputs], ["tokens in/out/reasoning", [ep.tokens_in, ep.tokens_out, ep.tokens_reasoning].map(fmt).join(" / ")],
    ["cost $", ep.cost_usd], ["episode", ep.episode_id],
  ]);
  for (const [id, href] of [["prev", data.prev], ["next", data.next]]) {
    if (href) $(id).href = href; else $(id).hidden = true;
  }
  if (ep.error_class || ep.error_message) {
    $("error").hidden = false;
    $("error").textContent = "Infrastructure error (not a model outcome): " + (ep.error_class || "") + ": " + (ep.error_message || "");
  }
  if (data.mismatch) { $("mismatch").hidden = false; $("mismatch").textContent = "Replay disagrees with the trace: " + data.mismatch; }
  if (!data.frames) {
    $("no-frames").hidden = false;
    $("no-frames").textContent = "Maze " + ep.maze_id + " (with the recorded checksum) is not in the run's manifest, "
      + "so no frames are shown.";
    $("stage").hidden = true;
    $("toggles").hidden = true;
  }

  // ---- overlays: heat map and optimal path ----------------------------------------------------
  const W = data.width || 1, H = data.height || 1;
  const overlay = $("overlay");
  overlay.setAttribute("viewBox", "0 0 " + W + " " + H);
  overlay.setAttribute("preserveAspectRatio", "none");
  const heat = svg("g", { id: "heat" });
  const maxVisits = Math.max(1, ...data.heat.map((h) => h[2]));
  for (const [x, y, c] of data.heat) {
    const r = svg("rect", { x, y, width: 1, height: 1, class: "heat-cell",
      "fill-opacity": (0.12 + 0.43 * c / maxVisits).toFixed(3) });
    const t = svg("title", {}); t.textContent = "(" + x + ", " + y + "): " + c + " visit" + (c === 1 ? "" : "s");
    r.appendChild(t);
    heat.appendChild(r);
  }
  const path = svg("g", { id: "path" });
  if (data.path.length) {
    path.appendChild(svg("polyline", { class: "path-line",
      points: data.path.map(([x, y]) => (x + 0.5) + "," + (y + 0.5)).join(" ") }));
    const [gx, gy] = data.path[data.path.length - 1];
    path.appendChild(svg("circle", { class: "path-end", cx: gx + 0.5, cy: gy + 0.5, r: 0.18 }));
  }
  overlay.append(heat, path);
  function overlays() {
    heat.style.display = $("show-heat").checked ? "" : "none";
    path.style.display = $("show-path").checked ? "" : "none";
  }
  $("show-heat").addEventListener("change", overlays);
  $("show-path").addEventListener("change", overlays);
  overlays();

  // ---- distance chart ---------------------------------------------------------------------------
  const chart = $("chart");
  const CW = 560, CH = 170, PL = 34, PB = 22, PT = 8, PR = 8;
  chart.setAttribute("viewBox", "0 0 " + CW + " " + CH);
  const action = [ep.d_start_action].concat(steps.map((s) => s.action_distance));
  const tile = [ep.d_start_tile].concat(steps.map((s) => s.tile_distance));
  const top = Math.max(1, ...action.filter((v) => v !== null), ...tile.filter((v) => v !== null));
  const X = (i) => PL + (CW - PL - PR) * (n ? i / n : 0);
  const Y = (v) => PT + (CH - PT - PB) * (1 - v / top);
  chart.appendChild(svg("line", { x1: PL, y1: Y(0), x2: CW - PR, y2: Y(0), class: "axis" }));
  chart.appendChild(svg("line", { x1: PL, y1: PT, x2: PL, y2: Y(0), class: "axis" }));
  for (const [v, label] of [[0, "0"], [top, String(top)]]) {
    const t = svg("text", { x: PL - 4, y: Y(v) + 4, class: "tick", "text-anchor": "end" }); t.textContent = label;
    chart.appendChild(t);
  }
  const last = svg("text", { x: CW - PR, y: CH - 6, class: "tick", "text-anchor": "end" });
  last.textContent = "step " + n; chart.appendChild(last);
  function series(values, cls) {
    let pts = [];
    const flush = () => { if (pts.length) chart.appendChild(svg("polyline", { points: pts.join(" "), class: cls })); pts = []; };
    values.forEach((v, i) => { if (v === null || v === undefined) flush(); else pts.push(X(i).toFixed(1) + "," + Y(v).toFixed(1)); });
    flush();
  }
  series(tile, "series tile");
  series(action, "series action");
  const marker = svg("line", { y1: PT, y2: Y(0), class: "now", id: "now" });
  chart.appendChild(marker);
  chart.addEventListener("click", (ev) => {
    const box = chart.getBoundingClientRect();
    const x = (ev.clientX - box.left) * CW / box.width;
    go(Math.round((x - PL) / (CW - PL - PR) * n));
  });

  // ---- event log -------------------------------------------------------------------------------
  const log = $("events");
  const items = steps.map((s, i) => {
    const li = document.createElement("li");
    li.value = s.step;
    li.textContent = (s.action === null ? "invalid reply (no-op)" : s.action) + " → " + s.event;
    if (!["moved", "turned", "bump", "noop"].includes(s.event)) li.className = "mech";
    li.addEventListener("click", () => go(i + 1));
    log.appendChild(li);
    return li;
  });

  // ---- the current step -------------------------------------------------------------------------
  const slider = $("slider");
  slider.max = String(n);
  const frame = $("frame");
  const noSummary = data.protocol.activity_summary === false;
  let cur = -1;
  function preload(i) { if (data.frames && i >= 0 && i <= n) new Image().src = data.frames[i]; }
  function go(s) {
    s = Math.max(0, Math.min(n, s | 0));
    if (s === cur) return;
    if (cur > 0) items[cur - 1].classList.remove("current");
    cur = s;
    slider.value = String(s);
    $("step-label").textContent = "step " + s + " / " + n;
    if (data.frames) { frame.src = data.frames[s]; preload(s + 1); preload(s - 1); }
    marker.setAttribute("x1", X(s)); marker.setAttribute("x2", X(s));
    if (s === 0) {
      $("step-title").textContent = "Start";
      const st = data.start;
      facts($("step-facts"), st ? [["position", "(" + st.x + ", " + st.y + ") facing " + DIRS[st.dir]],
        ["action distance", ep.d_start_action], ["tile distance", ep.d_start_tile]] : []);
      $("reply").textContent = n ? "(the episode starts here; step 1's reply follows)" : "(no step was taken)";
      $("reasoning").textContent = "";
      $("reasoning-size").textContent = "";
      $("summary").textContent = "";
    } else {
      const r = steps[s - 1];
      $("step-title").textContent = "Step " + r.step;
      facts($("step-facts"), [
        ["action", r.action === null ? "invalid reply: no-op" : r.action], ["parse", r.parse], ["event", r.event],
        ["position", "(" + r.x + ", " + r.y + ") facing " + DIRS[r.dir]], ["carrying", r.carrying || "nothing"],
        ["action distance", r.action_distance], ["tile distance", r.tile_distance],
        ["tokens in/out/reasoning", [r.tokens_in, r.tokens_out, r.tokens_reasoning].map(fmt).join(" / ")],
        ["latency s", r.latency_s], ["finish", r.finish_reason], ["retries", r.retries], ["re-asks", r.reasks],
      ]);
      $("reply").textContent = r.reply || "(empty reply)";
      $("reasoning").textContent = r.reasoning || "(none recorded)";
      $("reasoning-size").textContent = r.reasoning ? "(" + r.reasoning.length + " characters)" : "(none)";
      $("summary").textContent = noSummary ? "(this protocol shows the model no activity summary)"
        : data.summaries ? data.summaries[data.summary_of_step[s - 1]] : "(unavailable: maze not found)";
      items[s - 1].classList.add("current");
      // scroll the log box only, never the page
      const li = items[s - 1];
      if (li.offsetTop < log.scrollTop || li.offsetTop + li.offsetHeight > log.scrollTop + log.clientHeight) {
        log.scrollTop = li.offsetTop - log.clientHeight / 2;
      }
    }
    history.replaceState(null, "", "#" + s);
  }
  slider.addEventListener("input", () => go(+slider.value));
  $("back").addEventListener("click", () => go(cur - 1));
  $("fwd").addEventListener("click", () => go(cur + 1));
  document.addEventListener("keydown", (ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const k = ev.key;
    if (k === "ArrowRight") go(cur + 1);
    else if (k === "ArrowLeft") go(cur - 1);
    else if (k === "Home") go(0);
    else if (k === "End") go(n);
    else if (k === "h" || k === "H") { $("show-heat").checked = !$("show-heat").checked; overlays(); }
    else if (k === "o" || k === "O") { $("show-path").checked = !$("show-path").checked; overlays(); }
    else return;
    ev.preventDefault();
  });
  const fromHash = parseInt(location.hash.slice(1), 10);
  go(Number.isNaN(fromHash) ? 0 : fromHash);
  // when the first frame with everything drawn has been painted: for the browser tests and
  // bench/viewer_speed.py
  requestAnimationFrame(() => setTimeout(() => {
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
  }, 0));
})();
