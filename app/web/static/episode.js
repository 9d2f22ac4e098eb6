"use strict";
// One episode, shown in place of the index: its frame at each step (drawn on a canvas by
// frames.js from the maze and the recorded state), the reply and reasoning of that step, the
// activity summary the model was shown, the event log, the distance chart and the overlays.
// Its steps come from the steps file that holds it (loaded when first needed); only its own
// JSON string in that file is parsed. Everything from the trace goes on screen through
// textContent: a reply is text, never markup.
window.gridbench = window.gridbench || {};
(function (gb) {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const DIRS = ["east", "south", "west", "north"];
  const MOVES = ["moved", "turned", "bump", "noop", "teleported", "frozen", "froze", "rode"];
  // the discovery stages (env.discovery) and the mark each gets on the step chart, centred at x, y
  const STAGES = ["contact", "attempt", "success", "use"];
  const MARKS = {
    contact: (x, y) => "M" + (x - 4) + "," + y + "a4,4 0 1,0 8,0a4,4 0 1,0 -8,0",
    attempt: (x, y) => "M" + x + "," + (y - 5) + "L" + (x + 5) + "," + (y + 4) + "L" + (x - 5) + "," + (y + 4) + "Z",
    success: (x, y) => "M" + x + "," + (y - 5) + "L" + (x + 5) + "," + y + "L" + x + "," + (y + 5) + "L" + (x - 5) + "," + y + "Z",
    use: (x, y) => "M" + (x - 4) + "," + (y - 4) + "h8v8h-8Z",
  };
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

  // the record of episode i from its steps file, with every step column spread to one value per step
  async function record(i) {
    const files = gb.index.ix.step_files;
    let k = 0;
    while (k + 1 < files.length && files[k + 1] <= i) k++;
    const texts = await gb.load("steps-" + String(k).padStart(2, "0"));
    const rec = JSON.parse(texts[i - files[k]]);
    const values = gb.index.ix.step_values;
    const count = rec.n;
    const spread = (c) => Array.isArray(c) ? c : new Array(count).fill(c);
    const steps = [];
    const cols = {};
    for (const name in rec.steps) {
      const col = spread(rec.steps[name]);
      cols[name] = name in values ? col.map((code) => values[name][code]) : col;
    }
    const mech = spread(rec.mechanism_of_step);
    const shown = rec.summary_of_step === null ? null : spread(rec.summary_of_step);
    for (let s = 0; s < count; s++) {
      const r = {};
      for (const name in cols) r[name] = cols[name][s];
      r.mechanisms = rec.mechanisms[mech[s]];
      r.summary = shown && rec.summaries ? rec.summaries[shown[s]] : null;
      steps.push(r);
    }
    return { episode: rec.episode, steps, problem: rec.problem, summaries: rec.summaries, discovery: rec.discovery || [],
      frames3d: rec.frames3d || null, frames3d_missing: rec.frames3d_missing || null };
  }

  let view = null;  // what is shown now: {i, ep, steps, go}

  gb.episode = {};
  gb.episode.open = async function (i, step) {
    const ix = gb.index;
    if (!(i >= 0 && i < ix.N)) throw new Error("there is no episode " + i + " in this bundle");
    const [rec, mazes, tiles] = await Promise.all([record(i), gb.json("mazes"), gb.json("tiles")]);
    const row = (name) => ix.value(name, i);
    const protocol = row("protocol") || {};
    const entry = mazes[row("maze_checksum")];
    const sheetEntry = tiles[String(protocol.tile_size || ix.ix.default_tile_size)];
    const sheet = entry && sheetEntry && !rec.problem ? await gb.frames.sheet(sheetEntry) : null;
    show(i, rec, entry ? entry.maze : null, entry, sheet, protocol, row);
    view.go(step);
    gb.ready("episode");
  };

  function show(i, rec, maze, entry, sheet, protocol, row) {
    const ep = rec.episode, steps = rec.steps, n = steps.length;
    const mazeId = row("maze_id");
    // ---- header ------------------------------------------------------------------------------
    document.title = (row("model_name") || row("model")) + " · " + mazeId + " · " + row("condition");
    $("title").textContent = (row("model_name") || row("model")) + " on " + mazeId + " (" + row("condition") + ")";
    facts($("facts"), [
      ["model", row("model")], ["condition", row("condition")], ["repeat", row("repeat")], ["maze", mazeId],
      ["grid", row("grid")], ["category", row("category")], ["termination", row("termination")],
      ["solved", row("solved") ? "yes" : "no"], ["steps", row("steps")], ["optimal", row("optimal_actions")],
      ["step cap", ep.step_cap], ["progress", row("progress_action")], ["closest", row("closest_action")],
      ["invalid", row("invalid_outputs")], ["tokens in/out/reasoning", [ep.tokens_in, row("tokens_out"), ep.tokens_reasoning].map(fmt).join(" / ")],
      ["cost $", row("cost_usd")], ["episode", ep.episode_id],
    ]);
    const [before, after] = gb.neighbours(i);
    for (const [id, to] of [["prev", before], ["next", after]]) {
      $(id).hidden = to === null;
      $(id).href = to === null ? "#" : "#e=" + to;
    }
    $("error").hidden = !(ep.error_class || ep.error_message);
    $("error").textContent = "Infrastructure error (not a model outcome): " + (ep.error_class || "") + ": " + (ep.error_message || "");
    $("problem").hidden = !rec.problem;
    $("problem").textContent = rec.problem || "";
    const drawn = Boolean(maze && sheet);
    $("no-frames").hidden = drawn;
    $("no-frames").textContent = rec.problem ? "No frames: the recorded states do not fit the maze."
      : !maze ? "Maze " + mazeId + " (with the recorded checksum) is not in the run's manifest, so no frames are shown."
        : "No tiles of size " + (protocol.tile_size || gb.index.ix.default_tile_size) + " in this bundle: write it again (gridbench view).";
    $("stage").hidden = !drawn;
    // an episode the model saw in 3D: its own frames beside the map (the bundle drew them)
    const frames3d = rec.frames3d || null;
    const render = protocol.render || {};
    $("view3d").hidden = !(frames3d || rec.frames3d_missing);
    $("frame3d").hidden = !frames3d;
    $("view3d-label").textContent = frames3d ? "What the model was shown: 3D, camera " + render.camera
      : rec.frames3d_missing ? "Shown to the model in 3D (camera " + render.camera + "); not drawn here: " + rec.frames3d_missing : "";
    $("toggles").hidden = !drawn;

    // ---- overlays: heat map and optimal path --------------------------------------------------------
    const W = maze ? maze.grid[0].length : 1, H = maze ? maze.grid.length : 1;
    const overlay = $("overlay");
    overlay.replaceChildren();
    overlay.setAttribute("viewBox", "0 0 " + W + " " + H);
    overlay.setAttribute("preserveAspectRatio", "none");
    const visits = new Map();
    const visit = (x, y) => { const key = x + "," + y; visits.set(key, (visits.get(key) || 0) + 1); };
    if (entry) visit(entry.start.pos[0], entry.start.pos[1]);
    for (const s of steps) if (s.x !== null) visit(s.x, s.y);
    const heat = svg("g", { id: "heat" });
    const maxVisits = Math.max(1, ...visits.values());
    for (const [key, c] of visits) {
      const [x, y] = key.split(",").map(Number);
      const r = svg("rect", { x, y, width: 1, height: 1, class: "heat-cell",
        "fill-opacity": (0.12 + 0.43 * c / maxVisits).toFixed(3) });
      const t = svg("title", {}); t.textContent = "(" + x + ", " + y + "): " + c + " visit" + (c === 1 ? "" : "s");
      r.appendChild(t);
      heat.appendChild(r);
    }
    const path = svg("g", { id: "path" });
    const cells = entry ? entry.path : [];
    if (cells.length) {
      path.appendChild(svg("polyline", { class: "path-line",
        points: cells.map(([x, y]) => (x + 0.5) + "," + (y + 0.5)).join(" ") }));
      const [gx, gy] = cells[cells.length - 1];
      path.appendChild(svg("circle", { class: "path-end", cx: gx + 0.5, cy: gy + 0.5, r: 0.18 }));
    }
    overlay.append(heat, path);
    overlays();

    // ---- distance chart, with a lane of discovery marks per mechanism below it ------------------------
    const chart = $("chart");
    chart.replaceChildren();
    const lanes = rec.discovery.filter((t) => STAGES.some((st) => t[st] !== null && t[st] !== undefined));
    const LANE = 14, PLOT = 170;
    const CW = 560, CH = PLOT + (lanes.length ? 6 + LANE * lanes.length : 0), PL = 34, PB = 22 + CH - PLOT, PT = 8, PR = 8;
    chart.setAttribute("viewBox", "0 0 " + CW + " " + CH);
    const action = [ep.d_start_action].concat(steps.map((s) => s.action_distance));
    const tile = [ep.d_start_tile].concat(steps.map((s) => s.tile_distance));
    const known = action.concat(tile).filter((v) => v !== null && v !== undefined);
    const top = Math.max(1, ...known);
    const X = (s) => PL + (CW - PL - PR) * (n ? s / n : 0);
    const Y = (v) => PT + (CH - PT - PB) * (1 - v / top);
    chart.appendChild(svg("line", { x1: PL, y1: Y(0), x2: CW - PR, y2: Y(0), class: "axis" }));
    chart.appendChild(svg("line", { x1: PL, y1: PT, x2: PL, y2: Y(0), class: "axis" }));
    for (const [v, label] of [[0, "0"], [top, String(top)]]) {
      const t = svg("text", { x: PL - 4, y: Y(v) + 4, class: "tick", "text-anchor": "end" }); t.textContent = label;
      chart.appendChild(t);
    }
    const last = svg("text", { x: CW - PR, y: PLOT - 6, class: "tick", "text-anchor": "end" });
    last.textContent = "step " + n; chart.appendChild(last);
    function series(values, cls) {
      let pts = [];
      const flush = () => { if (pts.length) chart.appendChild(svg("polyline", { points: pts.join(" "), class: cls })); pts = []; };
      values.forEach((v, s) => { if (v === null || v === undefined) flush(); else pts.push(X(s).toFixed(1) + "," + Y(v).toFixed(1)); });
      flush();
    }
    series(tile, "series tile");
    series(action, "series action");
    lanes.forEach((t, k) => {
      const y = PLOT - 8 + LANE * (k + 1);
      const label = svg("text", { x: PL - 4, y: y + 4, class: "tick lane", "text-anchor": "end" });
      label.textContent = t.object;
      chart.appendChild(label);
      chart.appendChild(svg("line", { x1: PL, y1: y, x2: CW - PR, y2: y, class: "lane-line" }));
      for (const st of STAGES) {
        if (t[st] === null || t[st] === undefined) continue;
        const mark = svg("path", { d: MARKS[st](X(t[st]), y), class: "disc " + st,
          "data-object": t.object, "data-stage": st, "data-step": t[st] });
        const tip = svg("title", {}); tip.textContent = t.kind + " " + t.object + ": " + st + " at step " + t[st];
        mark.appendChild(tip);
        chart.appendChild(mark);
      }
    });
    $("discovery-legend").hidden = !lanes.length;
    const marker = svg("line", { y1: PT, y2: Y(0), class: "now", id: "now" });
    chart.appendChild(marker);
    chart.onclick = (ev) => {
      const box = chart.getBoundingClientRect();
      const x = (ev.clientX - box.left) * CW / box.width;
      go(Math.round((x - PL) / (CW - PL - PR) * n));
    };

    // ---- event log ---------------------------------------------------------------------------------
    const log = $("events");
    log.replaceChildren();
    const items = steps.map((s, k) => {
      const li = document.createElement("li");
      li.value = s.step;
      li.textContent = (s.action === null ? "invalid reply (no-op)" : s.action) + " → " + s.event;
      if (!MOVES.includes(s.event)) li.className = "mech";
      li.addEventListener("click", () => go(k + 1));
      log.appendChild(li);
      return li;
    });

    // ---- the current step ----------------------------------------------------------------------------
    const slider = $("slider");
    slider.max = String(n);
    const canvas = $("frame");
    const noSummary = protocol.activity_summary === false;
    const start = entry ? entry.start : null;
    let cur = -1;
    function stateAt(s) {
      if (s === 0) return start;
      const r = steps[s - 1];
      return Object.assign({}, r.mechanisms, { pos: [r.x, r.y], dir: r.dir });
    }
    function go(s) {
      s = Math.max(0, Math.min(n, s | 0));
      if (s === cur) return;
      if (cur > 0) items[cur - 1].classList.remove("current");
      cur = s;
      slider.value = String(s);
      $("step-label").textContent = "step " + s + " / " + n;
      if (drawn) gb.frames.draw(canvas, entry, stateAt(s), sheet, protocol.switch_frames);
      if (frames3d) $("frame3d").src = frames3d[s];
      marker.setAttribute("x1", X(s)); marker.setAttribute("x2", X(s));
      if (s === 0) {
        $("step-title").textContent = "Start";
        facts($("step-facts"), start ? [["position", "(" + start.pos[0] + ", " + start.pos[1] + ") facing " + DIRS[start.dir]],
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
          : r.summary !== null ? r.summary : !maze ? "(unavailable: maze not found)" : "(unavailable: the recorded states do not fit the maze)";
        items[s - 1].classList.add("current");
        // scroll the log box only, never the page
        const li = items[s - 1];
        if (li.offsetTop < log.scrollTop || li.offsetTop + li.offsetHeight > log.scrollTop + log.clientHeight) {
          log.scrollTop = li.offsetTop - log.clientHeight / 2;
        }
      }
      history.replaceState(null, "", "#e=" + i + "&s=" + s);
    }
    view = { i, go };
  }

  function overlays() {
    const heat = $("heat"), path = $("path");
    if (heat) heat.style.display = $("show-heat").checked ? "" : "none";
    if (path) path.style.display = $("show-path").checked ? "" : "none";
  }
  $("show-heat").addEventListener("change", overlays);
  $("show-path").addEventListener("change", overlays);
  $("slider").addEventListener("input", () => view && view.go(+$("slider").value));
  $("back").addEventListener("click", () => view && view.go(cur() - 1));
  $("fwd").addEventListener("click", () => view && view.go(cur() + 1));
  const cur = () => +$("slider").value;
  document.addEventListener("keydown", (ev) => {
    if ($("episode-view").hidden || !view || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const k = ev.key;
    if (k === "ArrowRight") view.go(cur() + 1);
    else if (k === "ArrowLeft") view.go(cur() - 1);
    else if (k === "Home") view.go(0);
    else if (k === "End") view.go(+$("slider").max);
    else if (k === "h" || k === "H") { $("show-heat").checked = !$("show-heat").checked; overlays(); }
    else if (k === "o" || k === "O") { $("show-path").checked = !$("show-path").checked; overlays(); }
    else if (k === "Escape") location.hash = "";
    else return;
    ev.preventDefault();
  });
})(window.gridbench);
