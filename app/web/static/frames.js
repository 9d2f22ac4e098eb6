"use strict";
// Frames drawn from a maze and one recorded state, with the tiles gridbench itself draws
// (data/tiles.js holds them, made by env.tiles.tile_atlas). Each cell is one whole tile copied
// unscaled to an integer offset, which is how Minigrid puts a frame together, so the canvas holds
// exactly the pixels of env.render.render_state: the frame the model was shown.
//
// A state is what env.mechanism_info says of it: {pos: [x, y], dir, keys: {id: [x, y] | null},
// doors: {id: "open" | "closed" | "locked"}, switches: {id: bool}, gates: {id: bool}}, and under
// multinet-pr57 arrows: {id: "east" | ...} (where each turntable points now).
// Under the study's rulesets objects look as the MultiNet study drew them (switches as discs,
// gates as grey doors), and switchFrames (the protocol's switch_frames) "study" draws every switch
// the same on and off, as env.minigrid_env.build_grid does. A maze in the neutral skin (maze.skin)
// shows every object with the neutral glyph of the tile it would otherwise show ("neutral/" + name).
window.gridbench = window.gridbench || {};
window.gridbench.frames = (function () {
  const sheets = {};

  // the tile atlas of one tile size, decoded once
  function sheet(entry) {
    if (!sheets[entry.size]) {
      const img = new Image();
      img.src = entry.png;
      sheets[entry.size] = img.decode().then(() => ({ img, size: entry.size, rows: entry.rows, columns: entry.columns }));
    }
    return sheets[entry.size];
  }

  // The tile name of every cell, row by row; named as env.tiles.tile_name names them. Keys come
  // last, as in env.minigrid_env.build_grid.
  const CELL_TILES = { hazard: "hazard", kill: "kill", frozen: "frozen" };

  function cells(maze, state, switchFrames) {
    const W = maze.grid[0].length, H = maze.grid.length;
    const r1 = maze.ruleset === "multinet-r1" || maze.ruleset === "multinet-pr57";
    const study = switchFrames === "study";
    const names = new Array(W * H);
    for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) names[y * W + x] = maze.grid[y][x] === "#" ? "wall" : "floor";
    names[maze.goal[1] * W + maze.goal[0]] = "goal";
    const skin = maze.skin && maze.skin !== "classic" ? maze.skin + "/" : "";
    const at = (pos, name) => { names[pos[1] * W + pos[0]] = skin + name; };
    const onOff = (on) => (on ? "on" : "off");
    for (const o of maze.objects) {
      if (o.kind === "door") at(o.pos, "door-" + o.color + "-" + state.doors[o.id]);
      else if (o.kind === "switch") {
        const on = state.switches[o.id];
        at(o.pos, "switch-" + o.color + (study ? "-disc" : r1 ? "-disc-" + onOff(on) : "-" + onOff(on)));
      } else if (o.kind === "gate") {
        const open = state.gates[o.id] ? "open" : "closed";
        at(o.pos, r1 ? "door-grey-" + open : "gate-" + o.color + "-" + open);
      } else if (o.kind === "teleporter") {
        at(o.pos, "teleporter-" + o.color);
        at(o.to, "teleporter-" + o.color);
      } else if (o.kind === "block") at(o.pos, "block-" + o.color);
      else if (o.kind === "turntable") at(o.pos, "turntable-" + state.arrows[o.id]);
      else if (CELL_TILES[o.kind]) at(o.pos, CELL_TILES[o.kind]);
    }
    for (const o of maze.objects) {
      if (o.kind === "key" && state.keys[o.id]) at(state.keys[o.id], "key-" + o.color);
    }
    return names;
  }

  // draw `state` of `maze` on `canvas` with a decoded sheet (from `sheet`)
  function draw(canvas, maze, state, tiles, switchFrames) {
    const W = maze.grid[0].length, H = maze.grid.length, T = tiles.size;
    if (canvas.width !== W * T) canvas.width = W * T;
    if (canvas.height !== H * T) canvas.height = H * T;
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    const names = cells(maze, state, switchFrames);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const name = names[y * W + x];
        const row = tiles.rows[name];
        const col = tiles.columns.indexOf(x === state.pos[0] && y === state.pos[1] ? state.dir : null);
        if (row === undefined || col < 0) throw new Error("no tile " + name + " facing " + state.dir);
        ctx.drawImage(tiles.img, col * T, row * T, T, T, x * T, y * T, T, T);
      }
    }
  }

  return { sheet, cells, draw };
})();
