"use strict";
// The diff page: two arms' episodes on the mazes both ran, then one maze's episodes step by step
// with the first step where they part marked. Every public arm's episodes and steps are in the
// page's JSON script element.
(function (gb) {
  const $ = gb.$;
  const fail = (e) => { $("load-error").hidden = false; $("load-error").textContent = String(e.message || e); };
  const arms = gb.data().arms;
  const at = (t, c, i) => (t.trace[c] || [])[i];
  const pos = (t, i) => i < t.trace.step.length ? "(" + at(t, "x", i) + "," + at(t, "y", i) + ")" : "";

  function stepsOf(a, b) {
    const n = Math.max(a.trace.step.length, b.trace.step.length);
    let departs = null;
    const rows = [];
    for (let i = 0; i < n; i++) {
      const same = i < a.trace.step.length && i < b.trace.step.length && at(a, "action", i) === at(b, "action", i) &&
        pos(a, i) === pos(b, i);
      if (!same && departs === null) departs = i + 1;
      const side = (t) => i < t.trace.step.length ? [at(t, "action", i), pos(t, i), at(t, "event", i),
        at(t, "action_distance", i),
        { text: at(t, "reply", i) || "", cls: "reply", title: at(t, "reasoning", i) ? "reasoning: " + at(t, "reasoning", i) : "" }] : ["", "", "", "", ""];
      rows.push([i + 1, ...side(a), ...side(b)]);
    }
    return [rows, departs];
  }

  function show(sides, checksum) {
    const [ea, eb] = sides.map((s) => (s[checksum] || [])[0]);
    const [rows, departs] = stepsOf(ea, eb);
    $("steps-box").hidden = false;
    $("steps-title").textContent = "Maze " + ea.maze_id + ": " + ea.episode_id + " beside " + eb.episode_id;
    $("departs").textContent = departs === null ? "The two episodes take the same actions through the same cells." :
      "They part at step " + departs + " (first step whose action or cell differs).";
    gb.fill("steps", ["step", "left action", "cell", "event", "distance", "left reply",
      "right action", "cell", "event", "distance", "right reply"], rows,
      (i) => departs !== null && i + 1 >= departs ? (i + 1 === departs ? "departs" : "after") : "");
    gb.ready("steps");
  }

  function mazes(sides) {
    const [a, b] = sides;
    const shared = Object.keys(a).filter((k) => k in b).sort((x, y) => a[x][0].maze_id.localeCompare(a[y][0].maze_id));
    const line = (e) => (e.solved ? "solved" : e.termination) + " in " + e.steps + " (progress " + gb.fmt(e.progress_action) + ")";
    gb.fill("mazes", ["maze", "left", "right", "steps", "in the viewer"], shared.map((k) => [a[k][0].maze_id,
      a[k].map(line).join("; "), b[k].map(line).join("; "), { text: "compare", cls: "link" }, ""]));
    const trs = $("mazes").tBodies[0].rows;
    shared.forEach((k, i) => {
      trs[i].cells[3].addEventListener("click", () => show(sides, k));
      // each side's first episode in its run's viewer (frames, heat map, the oracle's path)
      const links = [[a, "left"], [b, "right"]].filter(([s]) => s[k][0].view).map(([s, side]) => {
        const link = document.createElement("a");
        link.href = s[k][0].view;
        link.textContent = side;
        return link;
      });
      trs[i].cells[4].replaceChildren(...links);
    });
    $("steps-box").hidden = true;
    if (shared.length) show(sides, shared[0]);
    else gb.ready("mazes");
  }

  function choose() {
    try { mazes(["arm-a", "arm-b"].map((id) => arms[parseInt($(id).value, 10)].mazes)); } catch (e) { fail(e); }
  }
  ["arm-a", "arm-b"].forEach((id, j) => {
    const sel = $(id);
    arms.forEach((a, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = a.arm + (a.verified ? "" : " (not verified)");
      sel.appendChild(o);
    });
    sel.value = String(Math.min(j, arms.length - 1));
    sel.addEventListener("change", choose);
  });
  if (arms.length) choose();
  else { fail(new Error("no public arm to compare")); gb.ready("mazes"); }
})(window.gridbench);
