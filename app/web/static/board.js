"use strict";
// The board's page (index.html) and the helpers the diff page shares. The board's data is a JSON
// script element (script_json); every value from the traces is put on screen as textContent only.
window.gridbench = window.gridbench || {};
(function (gb) {
  const $ = (id) => document.getElementById(id);
  gb.$ = $;
  gb.data = () => JSON.parse($("board-data").textContent);
  gb.fmt = function (v, digits) {
    if (v === null || v === undefined) return "–";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(digits === undefined ? 3 : digits);
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (Array.isArray(v)) return v.map((x) => gb.fmt(x, digits)).join(", ");
    return String(v);
  };
  gb.interval = (lo, hi) => (lo === null || lo === undefined ? "" : " [" + gb.fmt(lo) + ", " + gb.fmt(hi) + "]");
  // a cell: text, or {text, cls, title}
  gb.cell = function (tag, c) {
    const td = document.createElement(tag);
    if (c !== null && typeof c === "object" && !Array.isArray(c)) {
      td.textContent = c.text;
      if (c.cls) td.className = c.cls;
      if (c.title) td.title = c.title;
    } else td.textContent = gb.fmt(c);
    return td;
  };
  gb.fill = function (id, head, rows, rowClass) {
    const table = $(id);
    const tr = document.createElement("tr");
    head.forEach((h) => tr.appendChild(gb.cell("th", h)));
    table.tHead.replaceChildren(tr);
    const body = document.createDocumentFragment();
    rows.forEach((r, i) => {
      const row = document.createElement("tr");
      if (rowClass) row.className = rowClass(i);
      r.forEach((c) => row.appendChild(gb.cell("td", c)));
      body.appendChild(row);
    });
    table.tBodies[0].replaceChildren(body);
  };
  gb.ready = function (view) {
    requestAnimationFrame(() => setTimeout(() => { document.body.dataset.ready = view; }, 0));
  };
  const verdict = (a) => a.verified ? { text: "verified", cls: "ok", title: a.episodes_checked + " episodes replayed" }
    : { text: "not verified", cls: "bad", title: a.not_reproduced.length + " of " + a.episodes_checked + " episodes do not reproduce" };
  const rate = (s) => s && s.episodes ? gb.fmt(s.solve_rate) + gb.interval(s.solve_rate_ci_low, s.solve_rate_ci_high) : "–";
  const prog = (s) => s && s.episodes ? gb.fmt(s.progress) + gb.interval(s.progress_ci_low, s.progress_ci_high) : "–";
  // an ISO time to the second, in UTC as recorded
  const when = (t) => t ? t.replace("T", " ").replace(/\.\d+/, "").replace("+00:00", " UTC") : null;
  const kind = (a) => a.human ? "human" : a.reference ? "reference" : "model";

  function board() {
    const b = gb.data();
    const all = b.arms.concat(b.sealed);
    $("summary").textContent = b.arms.length + " arms, " + b.sealed.length + " sealed; " +
      all.filter((a) => a.verified).length + " of " + all.length + " verified; " +
      b.shared_mazes.count + " mazes shared by the ranked arms";
    gb.fill("arms", ["arm", "kind", "verified", "runs", "episodes", "mazes", "solves", "solve rate [95%]",
      "progress [95%]", "efficiency", "shared mazes", "shared solve rate", "shared progress",
      "human-norm. progress", "human-norm. solve rate", "note"],
      b.arms.map((a) => [a.arm, kind(a), verdict(a), a.runs.join(", "), a.scores.episodes, a.scores.mazes, a.scores.solves,
        rate(a.scores), prog(a.scores), a.scores.efficiency, a.shared ? a.shared.mazes : null, rate(a.shared), prog(a.shared),
        a.human_normalised ? a.human_normalised.progress : null, a.human_normalised ? a.human_normalised.solve_rate : null,
        a.note]), (i) => b.arms[i].verified ? "" : "unverified");
    const failed = [];
    all.forEach((a) => a.not_reproduced.forEach((f) => failed.push([a.arm, f.run, f.episode_id,
      f.maze_id === undefined ? "(sealed)" : f.maze_id, f.step, f.column,
      f.recorded === undefined ? "" : f.recorded, f.replayed === undefined ? "" : f.replayed])));
    $("failures-box").hidden = !failed.length;
    gb.fill("failures", ["arm", "run", "episode", "maze", "departs at step", "column", "recorded", "replayed"], failed);
    $("sealed-box").hidden = !b.sealed.length;
    gb.fill("sealed", ["arm", "set", "commitment", "verified", "runs", "episodes", "solves", "solve rate [95%]",
      "progress [95%]", "efficiency"],
      b.sealed.map((a) => [a.arm, a.sealed.set, { text: a.sealed.commitment, cls: "hash" }, verdict(a), a.runs.join(", "),
        a.scores.episodes, a.scores.solves, rate(a.scores), prog(a.scores), a.scores.efficiency]));
    $("pairs-box").hidden = !b.comparisons.length;
    gb.fill("pairs", ["first", "second", "mazes", "progress first", "progress second", "difference [95%]", "p (Holm)",
      "solves first", "solves second", "solves p (Holm)", "ahead"],
      b.comparisons.map((c) => [c.arm_a, c.arm_b, c.mazes, c.progress_a, c.progress_b,
        gb.fmt(c.progress_diff) + gb.interval(c.progress_diff_ci_low, c.progress_diff_ci_high), c.progress_p_holm,
        c.solves_a, c.solves_b, c.solves_p_holm, c.ahead]));
    gb.fill("provenance", ["arm", "gridbench", "protocol hash", "maze set checksum", "model", "tier", "first started",
      "last finished", "tokens in", "tokens out", "reasoning tokens", "USD", "GPU-hours"],
      all.map((a) => { const p = a.provenance; return [a.arm, p.gridbench_version, { text: p.protocol_hash.join(", "), cls: "hash" },
        { text: p.maze_set_checksum.slice(0, 16) + "…", cls: "hash", title: p.maze_set_checksum }, p.model, p.tier,
        when(p.first_started_at), when(p.last_finished_at), p.tokens_in, p.tokens_out, p.tokens_reasoning, p.cost_usd, p.gpu_hours]; }));
    gb.ready("board");
  }
  if ($("arms")) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", board);
    else board();
  }
})(window.gridbench);
