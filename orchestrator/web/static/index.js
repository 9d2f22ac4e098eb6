"use strict";
// The episode index: one row per episode, filters over five columns, sort by any column.
// Values come from the run's traces and are only ever set as textContent.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const FILTERS = ["model_name", "condition", "maze_id", "termination", "solved"];
  const LABELS = {
    model_name: "model", model: "model string", maze_id: "maze", optimal_actions: "optimal",
    progress_action: "progress", closest_action: "closest", invalid_outputs: "invalid",
    tokens_out: "tokens out", cost_usd: "cost $",
  };
  const eps = data.episodes;
  const show = (v) => v === null || v === undefined ? "" : typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v);

  document.getElementById("run").textContent = "gridbench run " + data.run;
  const solved = eps.filter((e) => e.solved).length;
  document.getElementById("totals").textContent =
    eps.length + " episodes, " + solved + " solved (" + (100 * solved / Math.max(1, eps.length)).toFixed(1) + "%)";

  for (const key of FILTERS) {
    const select = document.getElementById("f-" + key);
    const values = Array.from(new Set(eps.map((e) => show(e[key])))).sort();
    select.appendChild(new Option("all (" + values.length + ")", ""));
    for (const v of values) select.appendChild(new Option(v, v));
    select.addEventListener("change", apply);
  }
  document.getElementById("filters").addEventListener("reset", () => setTimeout(apply, 0));

  const head = document.getElementById("head");
  for (const col of data.columns) {
    const th = document.createElement("th");
    th.textContent = LABELS[col] || col.replace(/_/g, " ");
    th.dataset.col = col;
    th.title = "sort by " + th.textContent;
    th.addEventListener("click", () => sortBy(col));
    head.appendChild(th);
  }

  // Rows are drawn a page at a time: laying out thousands of table rows is what makes a big
  // index slow to open, and nobody reads past the first screens without filtering.
  const PAGE = 200;
  const body = document.getElementById("rows");
  const rows = eps.map((e) => ({ e, tr: null }));
  function rowElement(r) {
    if (r.tr) return r.tr;
    const e = r.e;
    const tr = document.createElement("tr");
    tr.className = e.solved ? "solved" : "unsolved";
    for (const col of data.columns) {
      const td = document.createElement("td");
      if (col === "maze_id") {
        const a = document.createElement("a");
        a.href = e.href;
        a.textContent = show(e[col]);
        td.appendChild(a);
      } else {
        td.textContent = show(e[col]);
      }
      td.className = "c-" + col;
      tr.appendChild(td);
    }
    tr.addEventListener("click", (ev) => { if (ev.target.tagName !== "A") location.href = e.href; });
    r.tr = tr;
    return tr;
  }

  let order = rows, matching = rows, limit = PAGE;
  let sortKey = null, sortDir = 1;
  function sortBy(col) {
    sortDir = sortKey === col ? -sortDir : 1;
    sortKey = col;
    const cmp = (a, b) => {
      const x = a.e[col], y = b.e[col];
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sortDir;
    };
    order = rows.slice().sort(cmp);
    for (const th of head.children) th.className = th.dataset.col === col ? (sortDir > 0 ? "asc" : "desc") : "";
    apply();
  }

  function draw() {
    const frag = document.createDocumentFragment();
    for (const r of matching.slice(0, limit)) frag.appendChild(rowElement(r));
    body.replaceChildren(frag);
    const more = document.getElementById("more");
    const left = matching.length - limit;
    more.hidden = left <= 0;
    more.textContent = "show " + Math.min(PAGE, left) + " more (" + left + " not shown)";
  }

  function apply() {
    const want = {};
    for (const key of FILTERS) want[key] = document.getElementById("f-" + key).value;
    matching = order.filter((r) => FILTERS.every((k) => want[k] === "" || show(r.e[k]) === want[k]));
    limit = PAGE;
    document.getElementById("count").textContent = "showing " + matching.length + " of " + rows.length;
    draw();
  }
  document.getElementById("more").addEventListener("click", () => { limit += PAGE; draw(); });
  apply();
  // when the first frame with everything drawn has been painted: for the browser tests and
  // bench/viewer_speed.py
  requestAnimationFrame(() => setTimeout(() => {
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
  }, 0));
})();
