"""Build the shipped set ``study-m7m10`` from a folder of the MultiNet study's post-R1 maze files
(its layout: ``INDEX.md`` with one provenance line a file, ``M7/`` .. ``M10/``).

    .venv/bin/python scripts/build_study_m7m10_set.py STUDY_MAZES_FOLDER --out env/mazes

Every file of the four families is converted under ``multinet-pr57`` (the later harness's rules:
portals, death tiles, ice and turntables), with where it came from in ``meta.provenance``. A file
gridbench refuses (the box maze: a pushed block) is listed in the manifest's ``not_written`` with
the one-line reason, not written. Beside gridbench's optimal count under the harness's death rule
(a death tile resets the maze) the manifest records the count under the maze files' own reading
(a death ends the episode in failure, ``rules.death: fail``) and what the study stored about the
maze: nothing, since no stored run manifest lists these mazes (docs/generator.md#the-studys-sets).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from env.errors import BadInput
from env.generator.maze_pool import manifest_entry, write_set
from env.importers.study import Provenance, convert_file
from env.maze import MULTINET_PR57, Maze, maze_from_dict
from env.oracle import solve

SET = "study-m7m10"
OGBENCH = "ManifoldRG/ogbench"
MAZE_JSONS = "ogbench/procgen/maze_jsons"
LICENCE = "MIT, Manifold Research Group"
FAMILIES = ("M7", "M8", "M9", "M10")
STORED = ("the study stored no optimal count for these mazes: no stored run manifest lists them "
          "(study-next facts, section 5.3)")
NOTICE = """The maze layouts in this folder are converted from the MultiNet 2.0 gridworld study's post-R1
maze files, families M7-M10 (ManifoldRG/ogbench, ogbench/procgen/maze_jsons/; the work of Manifold
Research Group, ogbench pull request #2). Each maze's meta.provenance names its source file and
commit. They are used under the MIT licence of that repository:

MIT License

Copyright (c) Manifold Research Group

Permission is hereby granted, free of charge, to any person obtaining a copy of this software
and associated documentation files (the "Software"), to deal in the Software without
restriction, including without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""


def commits(index: str) -> dict[str, str]:
    """file (``M7/...json``) -> full commit, from INDEX.md's provenance table."""
    out = {}
    for line in index.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].split("/")[0] in FAMILIES and cells[0].endswith(".json"):
            out[cells[0]] = cells[1]
    return out


def build(folder: Path) -> tuple[list[tuple[Maze, dict[str, Any]]], list[dict[str, str]]]:
    known = commits((folder / "INDEX.md").read_text(encoding="utf-8"))
    kept, refused = [], []
    for rel in sorted(known, key=lambda r: (FAMILIES.index(r.split("/")[0]), r)):
        family, name = rel.split("/")
        prov = Provenance(OGBENCH, f"{MAZE_JSONS}/{rel}", known[rel], LICENCE, False)
        maze_id = f"{family}_{Path(name).stem}"
        try:
            maze = convert_file(folder / rel, prov, maze_id=maze_id, ruleset=MULTINET_PR57)
        except BadInput as e:
            refused.append({"file": rel, "field": e.field, "reason": e.message})
            continue
        fails = convert_file(folder / rel, prov, maze_id=maze_id, ruleset=MULTINET_PR57, rules={"death": "fail"})
        sol, sol_fail = solve(maze), solve(fails)
        study = {"set": SET, "family": family, "task_id": (maze.meta.multinet or {}).get("task_id") if maze.meta else None,
                 "optimal": sol.optimal_actions, "states_explored": sol.states_explored,
                 "optimal_death_fails": sol_fail.optimal_actions, "stored": None, "stored_note": STORED}
        d = maze.to_dict()
        d["meta"]["study"] = study
        kept.append((maze_from_dict(d, maze.id), study))
    return kept, refused


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="the study's post-R1 maze files (INDEX.md, M7/ .. M10/)")
    ap.add_argument("--out", type=Path, required=True, help=f"folder that receives {SET}/")
    args = ap.parse_args(argv)
    kept, refused = build(args.folder)
    entries = [{**manifest_entry(m, s["optimal"]), "study": s, "provenance": m.meta.provenance if m.meta else None}
               for m, s in kept]
    provenance = {
        "command": "python scripts/build_study_m7m10_set.py STUDY_MAZES_FOLDER --out env/mazes",
        "what": "the study's post-R1 mazes (ogbench families M7-M10: portals, death tiles, ice, turntables "
                "with the red key-door, switch-gate, blue key-door chain), in family order",
        "ruleset": MULTINET_PR57, "licence": "MIT (LICENSE.txt)", "stored": STORED,
    }

    def licence_file(tmp: Path) -> None:
        (tmp / "LICENSE.txt").write_text(NOTICE, encoding="utf-8")

    write_set(args.out / SET, SET, [m for m, _ in kept], entries, provenance, extra=licence_file,
              header={"not_written": refused})
    print(f"wrote {len(kept)} mazes to {args.out / SET}; refused {len(refused)}: "
          + "; ".join(f"{r['file']} ({r['field']})" for r in refused))
    return 0


if __name__ == "__main__":
    sys.exit(main())
