"""Build the shipped sets ``study`` and ``study-heldout`` from a folder of the MultiNet study's maze
files and facts (its layout: ``eval50.json``, ``heldout15.json``, ``pool.json``, ``README.md``,
``mazes/INDEX.md``, ``mazes/{eval,eval_r1_reconstructed,heldout,heldout_r1_reconstructed}/``).

    .venv/bin/python scripts/build_study_sets.py STUDY_FOLDER --out env/mazes

For every maze it converts the file that reproduces the study's stored counts (a rebuilt R1-era
file where ``mazes/INDEX.md`` names one) into the ``multinet-r1`` ruleset, records where the file
came from (repository, path, commit, licence, rebuilt or not) in ``meta.provenance``, and the
study's stored optimal count and explored-state count beside gridbench's in ``meta.study`` and
the manifest (docs/generator.md#the-studys-sets). Both folders get the MultiNet licence notice.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from env.generator.maze_pool import content_key, manifest_entry, write_set
from env.importers.study import Provenance, convert_file
from env.maze import Maze, maze_from_dict
from env.oracle import solve

OGBENCH = "ManifoldRG/ogbench"
MULTINET = "ManifoldRG/MultiNet-v2.0"
MAZE_JSONS = "ogbench/procgen/maze_jsons"
LICENCE = "MIT, Copyright (c) 2026 Manifold Research Group"
EVAL_MANIFEST = f"{MULTINET} gridworld/fixtures/manifest.r1_balanced_03.json@153ff25c64e3b8a8371c97e3ff763c94cf6014d8"
HELDOUT_MANIFEST = f"{MULTINET} gridworld/fixtures/manifest.conditional_eval.json@2652b57"
POOL_CSV = f"{MULTINET} analysis/candidate_mazes/all_maze_features.csv@451ff471db70aaf342659b78a46ef62821097357"
FAMILY_CATEGORY = {"S": "scale", "M": "mechanism", "B": "mechanism", "D": "distractor"}


def table_rows(markdown: str, header: str) -> list[list[str]]:
    """The cells of each row of the markdown table whose header line starts with ``header``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip().strip("`") for c in line.strip("|").split("|")])
    return rows


def full_commits(readme: str) -> dict[str, str]:
    """short -> full commit, from the README's table of commits."""
    return {short: full for short, full, _ in table_rows(readme, "| short |")}


def read_facts(folder: Path) -> dict[str, Any]:
    index = (folder / "mazes" / "INDEX.md").read_text(encoding="utf-8")
    return {
        "eval": json.loads((folder / "eval50.json").read_text(encoding="utf-8")),
        "heldout": json.loads((folder / "heldout15.json").read_text(encoding="utf-8")),
        "pool": {m["maze_id"]: m for m in json.loads((folder / "pool.json").read_text(encoding="utf-8"))["mazes"]},
        "commits": full_commits((folder / "README.md").read_text(encoding="utf-8")),
        "eval_index": {r[1]: r for r in table_rows(index, "| rank | task_id |")},
        "eval_rebuilt": {r[0]: r for r in table_rows(index, "| file | added wall segment |")},
        "heldout_rebuilt": {r[0]: r for r in table_rows(index, "| file | based on |")},
        # "- `name`: REPO `path`@short" lines naming a held-out file's source
        "heldout_sources": {name: (repo, path, short) for name, repo, path, short in
                            re.findall(r"^- `([^`]+)`: (\S+)\s+`([^`]+)`@(\w+)", index, flags=re.M)},
    }


def heldout_source(facts: dict[str, Any], entry: dict[str, Any], name: str) -> tuple[str, str, str]:
    """(repository, path, short commit) of a saved held-out file (its published original)."""
    if name.startswith("validation_10_"):  # one line covers the ten: MultiNet-v2.0 mazes/validation_10/
        return MULTINET, entry["manifest_source"], "0bb6625"
    return facts["heldout_sources"][name]


def _study_meta(maze: Maze, *, category: str | None, study: dict[str, Any]) -> Maze:
    d = maze.to_dict()
    if category:
        d["meta"]["category"] = category
    d["meta"]["study"] = study
    return maze_from_dict(d, maze.id)


def eval_mazes(folder: Path, facts: dict[str, Any]) -> list[tuple[Maze, dict[str, Any]]]:
    out = []
    for e in facts["eval"]:
        tid = e["task_id"]
        _, _, published, copy, *_ = facts["eval_index"][tid]
        path_in_repo, short = published.rsplit("@", 1)
        rebuilt = folder / "mazes" / "eval_r1_reconstructed" / f"{tid}.json"
        file = rebuilt if rebuilt.is_file() else folder / "mazes" / "eval" / f"{tid}.json"
        note = None
        if rebuilt.is_file():
            _, wall, goal = facts["eval_rebuilt"][f"{tid}.json"]
            note = (f"the published file ({copy}) plus the wall segment {wall}"
                    + ("" if goal == "unchanged" else f", the goal {goal}")
                    + ": the R1-era geometry, rebuilt (the R1 file is not published)")
        prov = Provenance(OGBENCH, f"{MAZE_JSONS}/{path_in_repo}", facts["commits"][short], LICENCE,
                          rebuilt.is_file(), note)
        maze = convert_file(file, prov, maze_id=tid)
        sol = solve(maze)
        csv = facts["pool"][e["source"].split("maze_jsons/")[1].removesuffix(".json")]
        stored, states = e["optimal_steps"], csv["states_explored"]
        study = {"set": "study", "rank": e["rank"], "task_id": tid,
                 "stored_optimal": stored, "stored_states": states,
                 "stored_source": f"{EVAL_MANIFEST}; states: {POOL_CSV}",
                 "optimal": sol.optimal_actions, "states_explored": sol.states_explored,
                 "reproduced": sol.optimal_actions == stored, "states_reproduced": sol.states_explored == states}
        if not study["reproduced"]:
            study["note"] = ("no published version of this maze reproduces the study's stored optimum; "
                             "gridbench scores it against its own count of this file")
        maze = _study_meta(maze, category=FAMILY_CATEGORY[e["maze_family"]], study=study)
        out.append((maze, study))
    return out


def _stored_heldout(entry: dict[str, Any], facts: dict[str, Any], upstream: str) -> dict[str, Any]:
    """The study's recorded R1 count of a held-out maze, where it has one: its results or findings
    file, or the pool's row for the same ogbench file. A count under other rules is kept as text."""
    text = entry["stored_count"]
    base = {"stored_source": text} if text else {}
    if text and "pre-R1" not in text and "over-count" not in text:
        base["stored_optimal"] = int(text.split()[0])
        m = re.search(r"states (\d+)", text)
        if m:
            base["stored_states"] = int(m.group(1))
    repo, path, _ = heldout_source(facts, entry, upstream)
    if repo == OGBENCH:
        row = facts["pool"][path.split("maze_jsons/")[1].removesuffix(".json")]
        if "stored_optimal" not in base or base["stored_optimal"] == row["optimal_steps"]:
            base.update(stored_optimal=row["optimal_steps"], stored_states=row["states_explored"])
            base["stored_source"] = "; ".join(x for x in (text, f"pool: {POOL_CSV}") if x)
    return base


def heldout_mazes(folder: Path, facts: dict[str, Any]) -> list[tuple[Maze, dict[str, Any]]]:
    out = []
    for e in facts["heldout"]:
        tid = e["task_id"]
        used = e["files"][-1]["file"]  # the rebuilt file where there is one
        file = folder / used
        name = file.name
        rebuilt = "_r1_reconstructed" in used
        upstream = Path(facts["heldout_rebuilt"][name][1]).name if rebuilt else name
        repo, path, short = heldout_source(facts, e, upstream)
        note = None
        if rebuilt:
            note = f"the published file plus: {facts['heldout_rebuilt'][name][2]} (rebuilt, as the study ran it)"
        prov = Provenance(repo, path, facts["commits"].get(short, short), LICENCE, rebuilt, note)
        maze = convert_file(file, prov, maze_id=tid)
        sol = solve(maze)
        study = {"set": "study-heldout", "task_id": tid, "manifest_source": e["manifest_source"],
                 **_stored_heldout(e, facts, upstream),
                 "optimal": sol.optimal_actions, "states_explored": sol.states_explored}
        if "stored_optimal" in study:
            study["reproduced"] = sol.optimal_actions == study["stored_optimal"]
        if "stored_states" in study:
            study["states_reproduced"] = sol.states_explored == study["stored_states"]
        out.append((_study_meta(maze, category=None, study=study), study))
    return out


def notice(readme: str) -> str:
    licence = readme.split("```", 2)[1].strip("\n")
    return ("The maze layouts in this folder are converted from the MultiNet 2.0 gridworld study's maze\n"
            "files (ManifoldRG/ogbench, ManifoldRG/MultiNet-v2.0; one held-out file from a public copy,\n"
            "bluebunnyanon/agent-benchmark-2d-maze). Each maze's meta.provenance names its source file\n"
            "and commit. They are used under the MIT licence of those repositories:\n\n" + licence + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="the study's maze files and facts")
    ap.add_argument("--out", type=Path, required=True, help="folder that receives study/ and study-heldout/")
    args = ap.parse_args(argv)
    facts = read_facts(args.folder)
    text = notice((args.folder / "README.md").read_text(encoding="utf-8"))
    sets = {"study": eval_mazes(args.folder, facts), "study-heldout": heldout_mazes(args.folder, facts)}
    keys = {name: {content_key(m): m.id for m, _ in pairs} for name, pairs in sets.items()}
    overlap = [[hid, keys["study"][k]] for k, hid in keys["study-heldout"].items() if k in keys["study"]]
    described = {"study": f"the 50 mazes of the study's R1 evaluation, {EVAL_MANIFEST}, in rank order",
                 "study-heldout": f"the 15 mazes of the study's ablation, {HELDOUT_MANIFEST}"}
    for name, pairs in sets.items():
        other = "study" if name == "study-heldout" else "study-heldout"
        entries = []
        for maze, study in pairs:
            entry = {**manifest_entry(maze, study["optimal"]), "study": study,
                     "provenance": maze.meta.provenance if maze.meta else None}
            same = [pair[1 if name == "study-heldout" else 0] for pair in overlap
                    if maze.id == pair[0 if name == "study-heldout" else 1]]
            if same:
                entry["same_maze_as"] = f"{other}/{same[0]}"
            entries.append(entry)
        provenance = {
            "command": "python scripts/build_study_sets.py STUDY_FOLDER --out env/mazes",
            "what": described[name], "ruleset": "multinet-r1", "licence": "MIT (LICENSE.txt)",
            "reproduced": sum(1 for _, s in pairs if s.get("reproduced")),
            "states_reproduced": sum(1 for _, s in pairs if s.get("states_reproduced")),
            "overlap": [{"study-heldout": h, "study": s} for h, s in overlap],
        }

        def licence_file(tmp: Path) -> None:
            (tmp / "LICENSE.txt").write_text(text, encoding="utf-8")

        write_set(args.out / name, name, [m for m, _ in pairs], entries, provenance, extra=licence_file)
        print(f"wrote {len(pairs)} mazes to {args.out / name}: optimal counts reproduced "
              f"{provenance['reproduced']}, explored states {provenance['states_reproduced']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
