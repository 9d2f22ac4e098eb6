"use strict";
// The viewer's page: loads the bundle's data files when they are needed, lists the episodes a
// page at a time with filters and sorting, and shows one episode in place of the list when the
// address says so (#e=<n>, #e=<n>&s=<step>; episode.js draws it).
// Data files are scripts that call gridbench.put(name, payload): a page opened from file:// may
// not fetch() files, but it may add script elements. Values from the traces are only ever put on
// screen as textContent.
window.gridbench = window.gridbench || {};
(function (gb) {
  const $ = (id) => document.getElementById(id);

  // ---- data files -------------------------------------------------------------------------------
  const payloads = {}, loading = {};
  const KEEP_STEP_FILES = 3;  // steps files held at once: each can be tens of MB in a large run
  const held = [];
  gb.put = (name, payload) => { payloads[name] = payload; };
  gb.load = function (name) {
    if (!loading[name]) {
      loading[name] = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = "data/" + name + ".js";
        script.onload = () => {
          script.remove();
          if (name in payloads) resolve(payloads[name]);
          else reject(new Error("data/" + name + ".js holds no " + name + " data: write the bundle again (gridbench view)"));
          delete payloads[name];
        };
        script.onerror = () => {
          delete loading[name];
          reject(new Error("data/" + name + ".js could not be loaded: write the bundle again (gridbench view)"));
        };
        document.head.appendChild(script);
      });
      if (name.startsWith("steps-")) {
        held.push(name);
        if (held.length > KEEP_STEP_FILES) delete loading[held.shift()];
      }
    }
    return loading[name];
  };
  const parsed = {};
  gb.json = (name) => parsed[name] || (parsed[name] = gb.load(name).then((text) => JSON.parse(text)));
  gb.fail = function (err) {
    $("load-error").hidden = false;
    $("load-error").textContent = String(err && err.message || err);
    document.body.dataset.ready = "error";
  };

  // ---- the index -------------------------------------------------------------------------------------
  const FILTERS = ["model_name", "condition", "maze_id", "category", "grid", "termination", "solved"];
  const LABELS = {
    model_name: "model", model: "model string", maze_id: "maze", optimal_actions: "optimal",
    progress_action: "progress", closest_action: "closest", invalid_outputs: "invalid",
    tokens_out: "tokens out", cost_usd: "cost $",
  };
  const PAGE = 100;
  const show = (v) => v === null || v === undefined ? "" : typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v);

  // The models' episodes and solves, with each built-in agent's counted apart (the report's
  // headline: a reference's solves are never pooled with the models').
  function headline(references, value) {
    const N = gb.index.N, refs = new Map(references.map((name) => [name, [0, 0]]));
    let episodes = 0, solved = 0;
    for (let i = 0; i < N; i++) {
      const won = value("solved", i) === true, ref = refs.get(value("model_name", i));
      if (ref) { ref[0] += won ? 1 : 0; ref[1] += 1; } else { episodes += 1; solved += won ? 1 : 0; }
    }
    const apart = refs.size ? " (references apart: " +
      Array.from(refs, ([name, [won, n]]) => name + " " + won + "/" + n).join(", ") + ")" : "";
    return episodes + " episodes, " + solved + " solved (" + (100 * solved / Math.max(1, episodes)).toFixed(1) + "%)" + apart;
  }

  function setUp(ix) {
    const N = ix.episodes, cols = ix.columns;
    // a column's value for episode i; coded columns hold codes into their values
    const value = (name, i) => {
      const c = cols[name];
      if (Array.isArray(c)) return c[i];
      const k = c.codes[i];
      return k === null ? null : c.values[k];
    };
    gb.index = { ix, N, value };

    $("run").textContent = "gridbench run " + ix.run;
    $("totals").textContent = headline(ix.references || [], value);

    for (const key of FILTERS) {
      const select = $("f-" + key);
      const values = cols[key].values.map((v, code) => [show(v), code]).sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
      select.appendChild(new Option("all (" + values.length + ")", ""));
      for (const [label, code] of values) select.appendChild(new Option(label, String(code)));
      select.addEventListener("change", apply);
    }
    $("f-search").addEventListener("input", apply);
    $("filters").addEventListener("reset", () => setTimeout(apply, 0));
    $("filters").addEventListener("submit", (ev) => ev.preventDefault());

    const head = $("head");
    for (const col of ix.shown) {
      const th = document.createElement("th");
      th.textContent = LABELS[col] || col.replace(/_/g, " ");
      th.dataset.col = col;
      th.title = "sort by " + th.textContent;
      th.addEventListener("click", () => sortBy(col));
      head.appendChild(th);
    }

    let order = null;  // null: the bundle's own order (model, condition, maze, repeat)
    let matching = [], page = 0, sortKey = null, sortDir = 1;

    // sort keys: a number per episode, so that 150k episodes sort without touching strings
    function sortKeys(col) {
      const c = cols[col];
      if (Array.isArray(c)) return c;
      const rank = c.values.map((v, code) => [v, code]).sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
      const byCode = new Array(c.values.length);
      rank.forEach(([, code], r) => { byCode[code] = r; });
      return c.codes.map((k) => k === null ? null : byCode[k]);
    }
    function sortBy(col) {
      sortDir = sortKey === col ? -sortDir : 1;
      sortKey = col;
      const keys = sortKeys(col);
      const idx = new Uint32Array(N);
      for (let i = 0; i < N; i++) idx[i] = i;
      order = Array.from(idx).sort((a, b) => {
        const x = keys[a], y = keys[b];
        if (x === y) return a - b;
        if (x === null || x === undefined) return 1;  // empty values last, whichever the direction
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sortDir;
      });
      for (const th of head.children) th.className = th.dataset.col === col ? (sortDir > 0 ? "asc" : "desc") : "";
      apply();
    }

    function apply() {
      const tests = [];
      for (const key of FILTERS) {
        const want = $("f-" + key).value;
        if (want !== "") tests.push([cols[key].codes, +want]);
      }
      const q = $("f-search").value.trim().toLowerCase();
      if (q) {
        const mazes = cols.maze_id;
        const ok = mazes.values.map((v) => String(v).toLowerCase().includes(q));
        tests.push([mazes.codes, ok]);
      }
      const out = [];
      for (let n = 0; n < N; n++) {
        const i = order ? order[n] : n;
        let keep = true;
        for (const [codes, want] of tests) {
          const k = codes[i];
          if (typeof want === "number" ? k !== want : !(k !== null && want[k])) { keep = false; break; }
        }
        if (keep) out.push(i);
      }
      matching = out;
      page = 0;
      $("count").textContent = "showing " + matching.length + " of " + N;
      draw();
    }

    function pages() { return Math.max(1, Math.ceil(matching.length / PAGE)); }
    function draw() {
      const frag = document.createDocumentFragment();
      for (const i of matching.slice(page * PAGE, (page + 1) * PAGE)) {
        const tr = document.createElement("tr");
        tr.className = value("solved", i) ? "solved" : "unsolved";
        tr.dataset.episode = String(i);
        for (const col of ix.shown) {
          const td = document.createElement("td");
          if (col === "maze_id") {
            const a = document.createElement("a");
            a.href = "#e=" + i;
            a.textContent = show(value(col, i));
            td.appendChild(a);
          } else {
            td.textContent = show(value(col, i));
          }
          td.className = "c-" + col;
          tr.appendChild(td);
        }
        frag.appendChild(tr);
      }
      $("rows").replaceChildren(frag);
      $("page").textContent = "page " + (page + 1) + " of " + pages();
      $("page-first").disabled = $("page-prev").disabled = page === 0;
      $("page-last").disabled = $("page-next").disabled = page >= pages() - 1;
    }
    const turn = (p) => { page = Math.max(0, Math.min(pages() - 1, p)); draw(); window.scrollTo(0, 0); };
    $("page-first").addEventListener("click", () => turn(0));
    $("page-prev").addEventListener("click", () => turn(page - 1));
    $("page-next").addEventListener("click", () => turn(page + 1));
    $("page-last").addEventListener("click", () => turn(pages() - 1));
    $("rows").addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr");
      if (tr && ev.target.tagName !== "A") location.hash = "e=" + tr.dataset.episode;
    });

    // the episodes before and after i in the list as filtered and sorted now
    gb.neighbours = function (i) {
      const at = matching.indexOf(i);
      if (at < 0) return [i > 0 ? i - 1 : null, i + 1 < N ? i + 1 : null];
      return [at > 0 ? matching[at - 1] : null, at + 1 < matching.length ? matching[at + 1] : null];
    };
    apply();
  }

  // ---- which view ------------------------------------------------------------------------------------
  // Marks the body once a view has been painted (data-ready="index" or "episode"), with the time
  // in ms since navigation: for the browser tests and bench/viewer_speed.py.
  gb.ready = function (view) {
    requestAnimationFrame(() => setTimeout(() => {
      document.body.dataset.readyMs = String(Math.round(performance.now()));
      document.body.dataset.ready = view;
    }, 0));
  };
  const listTitle = document.title;
  function route() {
    const want = new URLSearchParams(location.hash.slice(1));
    document.body.dataset.ready = "";
    if (want.has("e")) {
      $("index-view").hidden = true;
      $("episode-view").hidden = false;
      gb.episode.open(parseInt(want.get("e"), 10), parseInt(want.get("s") || "0", 10)).catch(gb.fail);
    } else {
      $("episode-view").hidden = true;
      $("index-view").hidden = false;
      document.title = listTitle;
      gb.ready("index");
    }
  }
  // the index starts loading at once; it is set up once every script of the page has run
  const parsedPage = new Promise((resolve) => {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resolve);
    else resolve();
  });
  Promise.all([gb.json("episodes"), parsedPage]).then(([ix]) => {
    setUp(ix);
    window.addEventListener("hashchange", route);
    route();
  }).catch(gb.fail);
})(window.gridbench);
