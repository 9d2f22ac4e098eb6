"""Fabricate traces with the exact EPISODES / STEPS schemas and answers known by construction.

``play`` runs a list of action names through the normative dynamics (``env.state.step``) and the
oracle, so hand-built episodes carry the same events and distances a real run would.
``episode_row`` fills an episode row from explicit numbers, for statistics tests that need no
steps. ``write_run`` writes one Parquet file per episode, as the trace writer does.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from analysis.load import BUDGET_COLUMNS
from env.minigrid_env import mechanism_info
from env.oracle import action_distance, optimal_actions, tile_distance
from env.state import ACTIONS, SIX_ACTIONS, initial_state, step
from traces._schema import EPISODES, STEPS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


# the start distance an episode row gets when a test gives its progress and not its distances
PROGRESS_SCALE = 1_000_000_000


def episode_row(**kw) -> dict:
    """An episode row: defaults, then ``kw``. The report computes progress from the distances
    (the study's unclipped formula), so a progress given without them (``progress_action=0.3``)
    gets a start distance of ``PROGRESS_SCALE`` and the end distance that reproduces it to 1e-9;
    a clipped trace column of at least 0 is kept as given."""
    row = {name: None for name in EPISODES.names}
    row.update(run="run-a", model_name="m", model="openai/fabricated", condition="baseline", protocol="{}",
               protocol_hash="p", repeat=0, maze_id="maze", maze_checksum="", grid_width=10,
               grid_height=10, grid="10x10", category="mechanism", n_keys=0, n_doors=0, n_switches=0,
               n_gates=0, n_distractors=0, chain_length=0, optimal_actions=20, step_cap=60,
               termination="stall", solved=False, steps=10, progress_action=0.0, progress_tile=0.0,
               d_start_action=20, d_end_action=20, d_start_tile=10, d_end_tile=10, closest_action=20,
               invalid_outputs=0, reasks=0, tokens_in=100, tokens_out=10, tokens_reasoning=0,
               reasoning_estimated=False, cost_usd=0.0, model_latency_s=0.0, wall_s=1.0, attempts=1,
               gridbench_version="0", env_version="1", started_at=T0, finished_at=T0)
    row.update(kw)
    for kind in ("action", "tile"):
        given = kw.get(f"progress_{kind}")
        if given is not None and f"d_start_{kind}" not in kw and f"d_end_{kind}" not in kw:
            row[f"d_start_{kind}"] = PROGRESS_SCALE
            row[f"d_end_{kind}"] = round(PROGRESS_SCALE * (1 - given))
            row[f"progress_{kind}"] = min(1.0, max(0.0, given))
    if "episode_id" not in kw or row["episode_id"] is None:
        row["episode_id"] = f"{row['model_name']}-{row['maze_id']}-{row['condition']}-{row['repeat']}"
    return row


def play(maze, actions: list[str | None], run="run-a", model_name="m", condition="baseline",
         episode_id=None, repeat=0, termination=None, reasoning_tokens=None, tokens_out=None,
         cost_per_step=0.0, budget: dict | None = None, **row) -> tuple[dict, list[dict]]:
    """Run ``actions`` (None = an invalid reply, a no-op) on ``maze``; the episode row and steps.

    ``budget``: the budget columns every step records (missing ones are null); ``row``: more
    episode columns (``model``, ``protocol``, ...)."""
    s = initial_state(maze)
    d0 = action_distance(maze, s)
    t0 = tile_distance(maze, s.pos)
    steps, dists = [], []
    seen = {s.mechanism_key()}  # the start counts as seen, as in the episode runner
    solved = False
    eid = episode_id or f"{model_name}-{maze.id}-{condition}-{repeat}"
    for i, a in enumerate(actions):
        if a is None:
            event = "noop"
        else:
            s, event = step(maze, s, ACTIONS.index(a))
        d = action_distance(maze, s)
        dists.append(d)
        info = mechanism_info(maze, s)
        steps.append({
            "run": run, "episode_id": eid, "model_name": model_name, "condition": condition,
            "maze_id": maze.id, "step": i + 1, "action": a, "parse": "builtin" if a else "invalid",
            "reply": "", "reasoning": "", "event": event, "x": s.pos[0], "y": s.pos[1], "dir": s.dir,
            "carrying": info["carrying"],
            "mechanisms": json.dumps({k: info[k] for k in ("keys", "doors", "switches", "gates")}),
            "novel": s.mechanism_key() not in seen, "action_distance": d, "tile_distance": tile_distance(maze, s.pos),
            "tokens_in": 100, "tokens_out": tokens_out[i] if tokens_out else 10,
            "tokens_reasoning": reasoning_tokens[i] if reasoning_tokens else 0,
            "reasoning_estimated": False, "cost_usd": cost_per_step, "latency_s": 0.1,
            "finish_reason": "stop", "retries": 0, "reasks": 0, "prompt_hash": "h", "image_hashes": [],
            **{c: (budget or {}).get(c) for c in BUDGET_COLUMNS},
        })
        seen.add(s.mechanism_key())
        if event == "goal":
            solved = True
            break
    d_end = dists[-1] if dists else d0
    reach = [d for d in dists if d is not None]
    opt = optimal_actions(maze).optimal_actions
    tile_end = steps[-1]["tile_distance"] if steps else t0
    episode = episode_row(
        run=run, episode_id=eid, model_name=model_name, condition=condition, repeat=repeat,
        maze_id=maze.id, maze_checksum=maze.checksum, grid_width=maze.width, grid_height=maze.height,
        grid=f"{maze.width}x{maze.height}", category=maze.category, n_keys=len(maze.keys),
        n_doors=len(maze.doors), n_switches=len(maze.switches), n_gates=len(maze.gates),
        n_distractors=len(maze.meta.distractors) if maze.meta else 0,
        chain_length=len(maze.meta.chain) if maze.meta else 0, optimal_actions=opt, step_cap=3 * opt,
        termination=termination or ("solved" if solved else "stall"), solved=solved, steps=len(steps),
        progress_action=1.0 if solved else (max(0.0, 1 - d_end / d0) if d_end is not None else 0.0),
        progress_tile=1.0 if solved else max(0.0, 1 - tile_end / t0),
        d_start_action=d0, d_end_action=d_end, d_start_tile=t0, d_end_tile=tile_end,
        closest_action=min([d0, *reach]),
        tokens_out=sum(st["tokens_out"] for st in steps),
        tokens_reasoning=sum(st["tokens_reasoning"] for st in steps),
        tokens_in=100 * len(steps), cost_usd=cost_per_step * len(steps), **row,
    )
    return episode, steps


def write_run(run_dir: Path, episodes: list[dict], steps: list[dict]) -> Path:
    """One episodes file and one steps file per episode, with the fixed schemas."""
    run_dir = Path(run_dir)
    (run_dir / "episodes").mkdir(parents=True, exist_ok=True)
    (run_dir / "steps").mkdir(parents=True, exist_ok=True)
    for e in episodes:
        eid = e["episode_id"]
        pq.write_table(pa.Table.from_pylist([e], schema=EPISODES), run_dir / "episodes" / f"{eid}.parquet")
        mine = [s for s in steps if s["episode_id"] == eid and s["run"] == e["run"]]
        pq.write_table(pa.Table.from_pylist(mine, schema=STEPS), run_dir / "steps" / f"{eid}.parquet")
    return run_dir


def room_maze(side: int, maze_id: str | None = None, objects=(), meta=None) -> object:
    """An open square room, start top-left facing east, goal bottom-right."""
    from env.maze import maze_from_dict

    grid = ["#" * side] + ["#" + "." * (side - 2) + "#" for _ in range(side - 2)] + ["#" * side]
    d = {"format": "gridbench.maze/1", "id": maze_id or f"room{side}", "grid": grid,
         "start": {"pos": [1, 1], "dir": "east"}, "goal": [side - 2, side - 2], "objects": list(objects)}
    if meta:
        d["meta"] = meta
    return maze_from_dict(d)


def demo_run(run_dir: Path, mazes, policies: dict[str, tuple[float, ...]], repeats: int = 1, seed: int = 0,
             run: str | None = None, condition: str = "baseline", max_steps: int = 60,
             budgets: dict[str, dict] | None = None) -> Path:
    """Biased random agents on real mazes: a run with known structure for end-to-end tests.

    ``policies`` maps a model name to the probabilities of the six actions; ``budgets`` a model
    name to the budget columns its steps record.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    run = run or Path(run_dir).name
    rows, steps = [], []
    for name, p in policies.items():
        for m in mazes:
            for r in range(repeats):
                acts = list(rng.choice(SIX_ACTIONS, size=max_steps, p=np.asarray(p) / sum(p)))
                reasoning = list(rng.integers(50, 500, size=max_steps))
                row, st = play(m, acts, run=run, model_name=name, condition=condition, repeat=r,
                               reasoning_tokens=reasoning, tokens_out=[x + 20 for x in reasoning],
                               cost_per_step=0.001, budget=(budgets or {}).get(name))
                if not row["solved"]:
                    row["termination"] = "step_cap"
                rows.append(row)
                steps += st
    write_run(run_dir, rows, steps)
    manifest = Path(run_dir) / "manifest.json"
    old = json.loads(manifest.read_text()) if manifest.is_file() else {"format": "gridbench.run/1", "run": run}
    old.setdefault("mazes", {}).update({m.checksum: m.to_dict() for m in mazes})
    manifest.write_text(json.dumps(old))
    return Path(run_dir)


# eval mazes of every grid size and category of the quickstart's set, small enough to play fast
QUICKSTART_EVAL = ("p0046", "p0059", "p0037", "p0008", "p0146")
# the quickstart's language-model arm: its two hand-made mazes and its protocol
QUICKSTART_MODEL_MAZES = ("example", "h14-small-walk")
QUICKSTART_MODEL_PROTOCOL = {"preset": "gridbench-final", "observation": "text", "thinking": False,
                             "max_output_tokens": 32, "temperature": 0.0, "history_frames": 0, "icl_example": False,
                             "step_cap_factor": 1}


def quickstart_run(run_dir: Path, model_acts: bool = False) -> Path:
    """A run shaped like the shipped quickstart (``orchestrator/sweeps/quickstart.yaml``): the three
    built-in agents, played by the episode runner on eval mazes of every grid size and category,
    and a small language model (``openai/gemma-3-270m``, its protocol) on two hand-made mazes.
    As first reported, every reply of that model is invalid (played as a no-op, one step per
    optimal action); ``model_acts`` makes it walk its mazes' shortest plans instead, stopping
    three actions short of the goal, its replies constrained by llama.cpp's grammar."""
    import asyncio

    from agents import Protocol, build_agent, resolve_protocol
    from env import resolve_maze
    from env.sets import resolve_mazes
    from episodes.episode import run_episode
    from traces import EpisodeIdentity, write_episode, write_manifest

    run_dir = Path(run_dir)
    run = run_dir.name
    mazes = [resolve_maze(f"eval/{m}") for m in QUICKSTART_EVAL]
    protocol = Protocol.preset("gridbench-final")
    for m in mazes:
        for name in ("oracle", "random", "explorer"):
            identity = EpisodeIdentity(run=run, episode_id=f"{name}-{m.id}", model_name=name, model=f"builtin/{name}",
                                       condition="baseline", repeat=0, maze_id=m.id)
            write_episode(run_dir, asyncio.run(run_episode(m, build_agent(f"builtin/{name}", protocol), protocol,
                                                           identity)))
    # the acting model's replies are constrained to the answer line, as the shipped quickstart's are
    model_protocol = resolve_protocol({**QUICKSTART_MODEL_PROTOCOL, **({"constrain": "action"} if model_acts else {})})
    budget: dict = {"max_output_tokens": 32, "thinking": False, **({"constraint": "grammar"} if model_acts else {})}
    rows, steps = [], []
    model_mazes = resolve_mazes(list(QUICKSTART_MODEL_MAZES))
    for m in model_mazes:
        plan = optimal_actions(m).plan_names
        acts: list[str | None] = list(plan[:-3]) if model_acts else [None] * len(plan)
        row, st = play(m, acts, run=run, model_name="gemma-270m", model="openai/gemma-3-270m",
                       protocol=model_protocol.to_json(), protocol_hash=model_protocol.hash,
                       tokens_out=[32] * len(acts), termination="step_cap",
                       budget=budget)
        rows.append(row)
        steps += st
    write_run(run_dir, rows, steps)
    write_manifest(run_dir, run=run, sweep={"name": "quickstart"},
                   mazes={m.checksum: m.to_dict() for m in [*mazes, *model_mazes]}, invocation={"command": ["test"]})
    return run_dir
