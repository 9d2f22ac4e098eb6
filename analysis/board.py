"""The board's numbers (``gridbench board``, docs/board.md): one row per arm across several runs,
each with its scores, whether every one of its episodes reproduced, and where it came from.

An arm is a model and condition. Its episodes from several runs (repeats, resumed runs) make one
row only when every run played it under the same protocol hash, on the same maze set and with
the same model string; otherwise each run's share is a row of its own, and the row says why it
was not pooled. A run whose manifest seals its maze set (``"sealed": {"commitment", "set"}``) is
an arm apart: never pooled with a public run, never compared with one, and nothing of it names a
maze. The verdicts come from the caller (``episodes.verify``): analysis replays nothing.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from typing import Any

import pandas as pd
import pyarrow.dataset as ds

from analysis.compute import served_cost, with_served_cost
from analysis.load import Traces
from analysis.ranking import ranking
from analysis.stats import cluster_ratio_ci, solve_rate_ci
from traces import EPISODES_DIR, ERROR, open_store, read_table, run_seal

FORMAT = "gridbench.board/1"
HUMAN_PREFIX = "human/"


def run_names(run_dir: Any) -> list[str]:
    """The names a run's episodes carry in their ``run`` column (a blank one reads as the folder's
    name, as ``analysis.load`` reads it)."""
    blank = open_store(run_dir).name
    names = read_table(run_dir, EPISODES_DIR, ["run"]).column("run").unique().to_pylist()
    return sorted({n or blank for n in names})


def maze_set_checksum(checksums: pd.Series) -> str:
    """sha256 over the sorted distinct maze checksums, one a line: the same set gives the same digest."""
    return hashlib.sha256("\n".join(sorted(set(checksums.dropna()))).encode()).hexdigest()


def _number(v: Any) -> Any:
    """A JSON value: NaN and infinities as None, numpy scalars as Python ones."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _signature(eps: pd.DataFrame) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    return (tuple(sorted(set(eps["protocol_hash"].dropna()))), maze_set_checksum(eps["maze_checksum"]),
            tuple(sorted(set(eps["model"].dropna()))))


def _not_pooled(signatures: dict[str, tuple]) -> str:
    first = next(iter(signatures.values()))
    differ = [what for i, what in enumerate(("protocol", "maze set", "model"))
              if any(s[i] != first[i] for s in signatures.values())]
    return f"not pooled across runs {', '.join(signatures)}: their {' and '.join(differ)} differ{'s' if len(differ) == 1 else ''}"


def board_rows(eps: pd.DataFrame, sealed: dict[str, dict[str, str] | None]) -> tuple[pd.Series, dict[str, dict]]:
    """Each episode's board row label, and each row's runs, pooling and sealing."""
    conditions = eps["condition"].nunique() > 1
    label = pd.Series("", index=eps.index, dtype="object")
    rows: dict[str, dict] = {}
    commitment = eps["run"].map(lambda r: (sealed.get(r) or {}).get("commitment"))
    for (model_name, condition, seal), g in eps.groupby(["model_name", "condition", commitment.fillna("")],
                                                       sort=True):
        base = str(model_name) + (f" [{condition}]" if conditions else "")
        runs = sorted(g["run"].unique())
        signatures = {r: _signature(g[g["run"] == r]) for r in runs}
        pooled = len(set(signatures.values())) == 1
        note = "" if pooled else _not_pooled(signatures)
        for part in ([runs] if pooled else [[r] for r in runs]):
            name = base if pooled else f"{part[0]}/{base}"
            if seal:
                name = f"{name} (sealed {sealed[part[0]]['set']})"  # type: ignore[index]
            label[g.index[g["run"].isin(part)]] = name
            rows[name] = {"model_name": model_name, "condition": condition, "runs": part, "pooled": len(part) > 1,
                          "note": note, "sealed": sealed.get(part[0])}
    return label, rows


def scores(eps: pd.DataFrame) -> dict[str, Any]:
    """Solves, the study's progress and efficiency of some episodes (docs/board.md)."""
    if eps.empty:
        return {"episodes": 0, "mazes": 0, "solves": 0}
    rate, method = solve_rate_ci(eps["solved"], eps["maze_checksum"])
    progress = cluster_ratio_ci(eps["progress_action"], eps["maze_checksum"])
    solved = eps[eps["solved"]]
    taken = solved["steps"].astype(float)
    efficiency = (solved["d_start_action"].astype(float) / taken.where(taken > 0))
    return {"episodes": len(eps), "mazes": int(eps["maze_checksum"].nunique()), "solves": int(eps["solved"].sum()),
            **{k: _number(v) for k, v in rate.as_dict("solve_rate").items()}, "solve_rate_ci_method": method,
            **{k: _number(v) for k, v in progress.as_dict("progress").items()},
            "efficiency": _number(efficiency.mean()) if efficiency.notna().any() else None,
            "efficiency_episodes": int(efficiency.notna().sum())}


def _maze_means(eps: pd.DataFrame) -> pd.DataFrame:
    return eps.assign(solved=eps["solved"].astype(float)).groupby("maze_checksum")[["progress_action", "solved"]].mean()


def human_normalised(eps: pd.DataFrame, human: pd.DataFrame) -> dict[str, Any] | None:
    """An arm's progress and solve rate over the humans' on the mazes both played (docs/board.md)."""
    if human.empty or eps.empty:
        return None
    mine, theirs = _maze_means(eps), _maze_means(human)
    common = mine.index.intersection(theirs.index)
    if common.empty:
        return None
    out: dict[str, Any] = {"mazes": len(common)}
    for col, name in (("progress_action", "progress"), ("solved", "solve_rate")):
        base = float(theirs.loc[common, col].mean())
        out[name] = _number(float(mine.loc[common, col].mean()) / base) if base > 0 else None
        out[f"human_{name}"] = base
    return out


def _tiers(traces: Traces) -> pd.DataFrame:
    """The distinct (run, model_name, condition, tier) of the steps that called a model (a step
    with no tier recorded was bought at the standard tier, as the report reads it)."""
    columns = ["run", "model_name", "condition", "tier"]
    parts = []
    for rs in traces.steps:
        called = rs.dataset.to_table(columns=columns, filter=ds.field("calls") > 0)
        t = called.group_by(columns).aggregate([]).to_pandas()
        t["run"] = t["run"].fillna(rs.name).replace("", rs.name)
        parts.append(t.assign(tier=t["tier"].fillna("standard")))
    return pd.concat(parts, ignore_index=True).drop_duplicates() if parts else pd.DataFrame(columns=columns)


def _when(v: Any) -> str | None:
    return None if pd.isna(v) else pd.Timestamp(v).isoformat()


def provenance(eps: pd.DataFrame, tiers: pd.DataFrame, gpu: pd.Series, sealed: bool) -> dict[str, Any]:
    def distinct(col: str) -> list[Any]:
        return sorted({str(v) for v in eps[col].dropna()})

    mine = tiers.merge(eps[["run", "model_name", "condition"]].drop_duplicates())
    cost = eps["cost_usd"]
    return {"gridbench_version": distinct("gridbench_version"), "protocol_hash": distinct("protocol_hash"),
            "maze_set_checksum": maze_set_checksum(eps["maze_checksum"]), "model": distinct("model"),
            "tier": sorted(set(mine["tier"])), "first_started_at": _when(eps["started_at"].min()),
            "last_finished_at": _when(eps["finished_at"].max()),
            "tokens_in": int(eps["tokens_in"].fillna(0).sum()), "tokens_out": int(eps["tokens_out"].fillna(0).sum()),
            "tokens_reasoning": int(eps["tokens_reasoning"].fillna(0).sum()),
            "cost_usd": _number(float(cost.sum())) if cost.notna().any() else None,
            "gpu_hours": _number(gpu.get("gpu_hours")), "gpu_cost_usd": _number(gpu.get("gpu_cost_usd")),
            **({} if sealed else {"mazes": distinct("maze_id")})}


def failures(eps: pd.DataFrame, verdicts: pd.DataFrame, sealed: bool) -> list[dict[str, Any]]:
    """Every episode of ``eps`` that did not reproduce, with where it departs (for a sealed arm its
    id, step and column only: a recorded value could say what the maze holds)."""
    mine = eps[["run", "episode_id", "maze_id"]].merge(verdicts, on=["run", "episode_id"], how="left")
    bad = mine[mine["ok"] != True]  # noqa: E712  (a missing verdict is not a pass)
    keep = ["run", "episode_id", "step", "column"] + ([] if sealed else ["maze_id", "recorded", "replayed"])
    found = bad.sort_values(["run", "episode_id"])[keep].astype(object).where(bad[keep].notna(), None)
    return [{**r, "step": None if r["step"] is None else int(r["step"])} for r in found.to_dict("records")]


def labelled(traces: Traces) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Every episode of the runs, errors too, with its board row's label (``board_arm``), and the rows."""
    sealed = {name: run_seal(d) for d in traces.run_dirs for name in run_names(d)}
    everything = pd.concat([traces.episodes, traces.errors], ignore_index=True)
    label, rows = board_rows(everything, sealed)
    return everything.assign(board_arm=label), rows


def board(traces: Traces, verdicts: pd.DataFrame, gpu_hour_usd: float | None = None) -> dict[str, Any]:
    """The board as ``board.json`` holds it (docs/board.md). ``verdicts``: a row per episode of every
    run, its ``run`` and ``episode_id`` and the fields of an ``episodes.verify.Verdict`` (``ok``,
    ``step``, ``column``, ``recorded``, ``replayed``)."""
    everything, rows = labelled(traces)
    scored = everything[everything["termination"] != ERROR].merge(
        traces.episodes[["run", "episode_id"]], on=["run", "episode_id"])
    scored["arm"] = scored["board_arm"]
    human = scored["model"].fillna("").str.startswith(HUMAN_PREFIX)
    public = ~scored["board_arm"].map(lambda a: rows[a]["sealed"] is not None).astype(bool)
    ranked = public & ~human
    arms_ranked = sorted(scored.loc[ranked, "board_arm"].unique())
    shared = set.intersection(*(set(scored.loc[scored["board_arm"] == a, "maze_checksum"]) for a in arms_ranked)) \
        if arms_ranked else set()
    on_shared = scored[ranked & scored["maze_checksum"].isin(shared)]
    as_arms = replace(traces, episodes=scored)
    gpu = with_served_cost(pd.DataFrame({"arm": list(rows), "cost_usd": float("nan")}), as_arms,
                           served_cost(as_arms, gpu_hour_usd)).set_index("arm")
    tiers = _tiers(traces)
    out_rows = []
    for name, info in rows.items():
        eps = scored[scored["board_arm"] == name]
        all_eps = everything[everything["board_arm"] == name]
        is_sealed = info["sealed"] is not None
        failed = failures(all_eps, verdicts, is_sealed)
        is_human = bool(eps["model"].fillna("").str.startswith(HUMAN_PREFIX).any())
        out_rows.append({
            "arm": name, "model_name": info["model_name"], "condition": info["condition"], "runs": info["runs"],
            "pooled": info["pooled"], "note": info["note"], "reference": bool(eps["reference"].any()),
            "human": is_human, "sealed": info["sealed"],
            "verified": not failed and len(all_eps) > 0, "episodes_checked": len(all_eps),
            "errors": int((all_eps["termination"] == "error").sum()),
            "scores": scores(eps), "shared": None if is_sealed or is_human else scores(eps[eps["maze_checksum"].isin(shared)]),
            "human_normalised": None if is_sealed or is_human else human_normalised(
                eps, scored[human & public & (scored["board_arm"] != name)]),
            "provenance": provenance(all_eps, tiers, gpu.loc[name] if "gpu_hours" in gpu else pd.Series(dtype=float),
                                     is_sealed),
            "not_reproduced": failed})
    comparisons = ranking(replace(traces, episodes=on_shared)) if len(arms_ranked) > 1 and shared else pd.DataFrame()
    public_rows = [r for r in out_rows if r["sealed"] is None]
    return {"format": FORMAT, "arms": public_rows, "sealed": [r for r in out_rows if r["sealed"] is not None],
            "shared_mazes": {"count": len(shared), "maze_set_checksum": maze_set_checksum(pd.Series(sorted(shared))),
                             "arms": arms_ranked},
            "comparisons": [{k: _number(v) for k, v in r.items()} for r in comparisons.to_dict("records")]}
