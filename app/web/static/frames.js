"use strict";
// Frames drawn from a maze and one recorded state, with the tiles gridbench itself draws
// (data/tiles.js holds them, made by env.tiles.tile_atlas). Each cell is one whole tile copied
// unscaled to an integer offset, which is how Minigrid puts a frame together, so the canvas holds
// exactly the pixels of env.render.render_state: the frame the model was shown.
//
// A state is what env.mechanism_info says of it: {pos: [x, y], dir, keys: {id: [x, y] | null},
// doors: {id: "open" | "closed" | "locked"}, switches: {id: bool}, gates: {id: bool}}, and the
// fields a later tile keeps there (env.mechanics, Mechanic.info: arrows: {id: "east" | ...}).
// How each object looks is not decided here: the maze's entry carries, per switch_frames, each
// object's field of the state, its cells and its tile for each value that field records
// (env.minigrid_env.cell_looks, read off the same function env.minigrid_env.build_grid draws
// with), so the page knows no ruleset or skin.
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

  // The tile name of every cell, row by row; keys come last, as in env.minigrid_env.build_grid.
  function cells(entry, state, switchFrames) {
    const maze = entry.maze, W = maze.grid[0].length, H = maze.grid.length;
    const names = new Array(W * H);
    for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) names[y * W + x] = maze.grid[y][x] === "#" ? "wall" : "floor";
    names[maze.goal[1] * W + maze.goal[0]] = "goal";
    const at = (pos, name) => { names[pos[1] * W + pos[0]] = name; };
    for (const o of entry.looks[switchFrames === "study" ? "study" : "distinct"]) {
      const value = o.field === null ? undefined : (state[o.field] || {})[o.id];
      if (o.field === "keys") {
        if (value) at(value, o.tiles[""]);
      } else {
        const name = o.tiles[value === undefined ? "" : String(value)];
        for (const cell of o.cells) at(cell, name);
      }
    }
    return names;
  }

  // draw `state` of a maze's entry (its maze and looks) on `canvas` with a decoded sheet (from `sheet`)
  function draw(canvas, entry, state, tiles, switchFrames) {
    const maze = entry.maze, W = maze.grid[0].length, H = maze.grid.length, T = tiles.size;
    if (canvas.width !== W * T) canvas.width = W * T;
    if (canvas.height !== H * T) canvas.height = H * T;
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    const names = cells(entry, state, switchFrames);
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
