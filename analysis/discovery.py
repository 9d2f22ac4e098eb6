"""Discovery timelines per arm and mechanism kind: when episodes first met, tried, operated and used
their keys, doors, switches and gates (``env.discovery``, read from the step rows by
``traces.episode_timelines``).

An episode counts for a kind when its maze is known and has an object of that kind. Its stage
step for the kind is the earliest over the kind's objects (the first key taken, whichever key);
per arm and kind the table gives the share of those episodes that reached each stage and the
median step among those that did. The steps are read for at most ``SAMPLE`` episodes per arm (a
seeded sample when an arm has more), only the columns the timelines need, so a large run pays
for a bounded number of episodes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analysis.load import Traces
from analysis.metrics import order_arms, with_pooled
from analysis.sections import Built, Context, Section
from analysis.stats import SEED
from env.discovery import KINDS, LATER_KINDS, STAGES, Timeline
from env.maze import MULTINET_PR57
from traces import episode_timelines

SAMPLE = 2_000  # episodes per arm whose steps are read
COLUMNS = ["run", "episode_id", "step", "action", "x", "y", "dir", "carrying", "mechanisms"]
BATCH_ROWS = 8_192  # step rows per batch read


def _eligible(traces: Traces) -> pd.DataFrame:
    """The episodes on known mazes with a mechanism, at most ``SAMPLE`` per arm."""
    eps = traces.episodes
    has = {m: bool(z.keys or z.doors or z.switches or z.gates
                   or (z.ruleset == MULTINET_PR57 and any(o.kind in LATER_KINDS for o in z.objects)))
           for m, z in traces.mazes.items() if z is not None}
    eps = eps[eps["maze_id"].map(has).eq(True)]
    rng = np.random.default_rng(SEED)
    parts = [g if len(g) <= SAMPLE else g.iloc[np.sort(rng.choice(len(g), SAMPLE, replace=False))]
             for _, g in eps.groupby("arm", sort=True)]
    return pd.concat(parts) if parts else eps


def episode_stages(traces: Traces) -> pd.DataFrame:
    """Per episode read and mechanism kind of its maze: the earliest step of each stage (NaN: never)."""
    eps = _eligible(traces)
    # (run, episode id) -> its maze and how many step rows it wrote (the episode's ``steps``)
    wanted = {(r.run, r.episode_id): (r.maze_id, None if pd.isna(r.steps) else int(r.steps))
              for r in eps[["run", "episode_id", "maze_id", "steps"]].itertuples(index=False)}
    done, overflow = _read_timelines(traces, wanted, eps["episode_id"].astype(str).unique().tolist())
    if overflow:  # more rows than the episode's count said: read those episodes again, whole
        again, _ = _read_timelines(traces, {k: (wanted[k][0], None) for k in overflow},
                                   sorted({e for _, e in overflow}))
        done.update(again)
    rows = []
    for e in eps[["run", "episode_id", "arm"]].itertuples(index=False):
        for t in done.get((e.run, e.episode_id), ()):
            rows.append({"arm": e.arm, "run": e.run, "episode_id": e.episode_id, "kind": t.kind,
                         **{s: getattr(t, s) for s in STAGES}})
    cols = ["arm", "run", "episode_id", "kind", *STAGES]
    per_object = pd.DataFrame(rows, columns=cols)
    for s in STAGES:
        per_object[s] = per_object[s].astype("float64")
    return per_object.groupby(["arm", "run", "episode_id", "kind"], sort=False)[list(STAGES)].min().reset_index()


Key = tuple[str, str]  # (run, episode id)


def _read_timelines(traces: Traces, wanted: dict[Key, tuple[str, int | None]],
                    ids: list[str]) -> tuple[dict[Key, list[Timeline]], set[Key]]:
    """The timelines of the ``wanted`` episodes (key -> maze id and step rows expected, None: not
    known) whose steps the runs hold, and the keys of those with more rows than expected.

    The steps stay in Arrow until their episode is read, and an episode is read (and its rows let
    go) as soon as all its rows have come: the steps are never all held at once, whatever the run's
    size (as Python rows they took several times the memory of Arrow; all in Arrow, still the
    report's peak). An episode whose count is unknown, or that has fewer rows than its count, is
    read once every batch has come."""
    done: dict[Key, list[Timeline]] = {}
    pending: dict[Key, list[pa.Table]] = {}
    seen: dict[Key, int] = {}
    overflow: set[Key] = set()
    for run in traces.steps:
        if not ids:
            break
        # small batches, decoded in this thread: Arrow's reader threads each grew a heap of their
        # own that the C library kept after the batches were freed, the report's peak
        for batch in run.dataset.to_batches(columns=COLUMNS, filter=pc.field("episode_id").isin(ids),
                                            batch_size=BATCH_ROWS, use_threads=False):
            for key, part in _by_episode(pa.Table.from_batches([batch]), run.name).items():
                if key not in wanted:
                    continue
                if key in done:
                    overflow.add(key)
                    continue
                pending.setdefault(key, []).append(part)
                seen[key] = seen.get(key, 0) + part.num_rows
                expected = wanted[key][1]
                if expected is not None and seen[key] >= expected:
                    done[key] = _timelines(traces, wanted[key][0], pending.pop(key))
    for key, parts in pending.items():
        done[key] = _timelines(traces, wanted[key][0], parts)
    return done, overflow


def _by_episode(table: pa.Table, run_name: str) -> dict[Key, pa.Table]:
    """(run, episode id) -> that episode's rows of ``table``, in table order. The run folder's name
    stands in for a blank run column, as for the episodes."""
    if table.num_rows == 0:
        return {}
    run = table.column("run")
    blank = pc.fill_null(pc.equal(run, ""), True)
    keys = pa.table({"run": pc.if_else(blank, run_name, run), "episode_id": table.column("episode_id")})
    frame = keys.to_pandas(strings_to_categorical=True)
    runs, episodes = frame["run"].cat.categories, frame["episode_id"].cat.categories
    code = frame["run"].cat.codes.to_numpy(np.int64) * len(episodes) + frame["episode_id"].cat.codes.to_numpy()
    if np.count_nonzero(np.diff(code)) + 1 != len(np.unique(code)):
        # an episode's rows lie apart: bring them together, each episode's in table order
        order = np.argsort(code, kind="stable")
        table, code = table.take(pa.array(order)), code[order]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    ends = np.append(starts[1:], len(code))
    return {(str(runs[code[a] // len(episodes)]), str(episodes[code[a] % len(episodes)])): table.slice(a, b - a)
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True)}


def _timelines(traces: Traces, maze_id: str, parts: list[pa.Table]) -> list[Timeline]:
    maze = traces.mazes[maze_id]
    assert maze is not None  # _eligible kept known mazes only
    # rows as Python values (a null stays None, as the timelines read it)
    return episode_timelines(maze, [row for part in parts for row in part.to_pylist()])


def discovery(traces: Traces) -> pd.DataFrame:
    per = episode_stages(traces)
    if per.empty:
        return pd.DataFrame()
    rows = []
    for (arm, kind), g in with_pooled(per, traces.references).groupby(["arm", "kind"], sort=False):
        row: dict = {"arm": arm, "kind": kind, "episodes": len(g)}
        for s in STAGES:
            reached = g[s].dropna()
            row[f"{s}_episodes"] = len(reached)
            row[f"{s}_share"] = len(reached) / len(g)
            row[f"{s}_median_step"] = float(reached.median()) if len(reached) else np.nan
        rows.append(row)
    t = pd.DataFrame(rows)
    t["kind"] = pd.Categorical(t["kind"], categories=list(KINDS), ordered=True)
    t = t.sort_values("kind", kind="stable")
    t["kind"] = t["kind"].astype(str)
    return order_arms(t, traces)


def as_json(t: pd.DataFrame) -> dict:
    """metrics.json ``discovery``: arm -> kind -> stage -> {share, median_step, episodes}."""
    out: dict = {}
    for r in t.to_dict("records"):
        out.setdefault(r["arm"], {})[r["kind"]] = {
            "episodes": r["episodes"],
            **{s: {"episodes": r[f"{s}_episodes"], "share": r[f"{s}_share"], "median_step": r[f"{s}_median_step"]}
               for s in STAGES}}
    return out


# ---- sections ------------------------------------------------------------------------------------

def _discovery(ctx: Context) -> Built | None:
    table = discovery(ctx.traces)
    if table.empty:
        return None  # no episode on a known maze with a mechanism
    return Built({"discovery": table}, json={"discovery": as_json(table)})


DISCOVERY_SECTION = Section(
    "discovery", "Discovery timelines",
    "For each key, door, switch and gate of an episode's maze, four stages (docs/report.md, `env.discovery`): "
    "`contact` (the agent stood on the object's cell or on one of its four orthogonal neighbours, diagonals "
    "not counted; 0 at the start), `attempt` (the first pickup or toggle on or facing it, whatever it did: for "
    "a gate a toggle facing it, which opens it only when made standing on a switch that controls it), "
    "`success` (first operated: a key taken, a door opened, a switch flipped, a gate "
    "opened by any of its switches) and `use` (its effect first used: walked through the door or gate; for a key, "
    "through a door of its colour that started locked; for a switch, through a gate it controls while on). "
    "**Definition used:** per episode and kind the earliest step over the kind's objects; per arm and kind, over "
    "the episodes whose maze has that kind (`episodes`), the share that reached each stage and the median step "
    f"among those that did. Steps are read for at most {SAMPLE:,} episodes per arm (a seeded sample beyond "
    "that); episodes whose maze is not found are left out.",
    _discovery,
)
