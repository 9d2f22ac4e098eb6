"""Incidents: the run's own timeline of infrastructure failures, per arm.

Two sources, both in the traces. Every attempt of a model call that failed and was retried is in
its step's ``failures`` column (``agents.caller``: the class as litellm names it, when it failed,
the seconds then waited); an episode that ended in ``error`` has its ``error_class`` and its
``finished_at``. Runs recorded before the ``failures`` column read it as null: only their error
episodes show.

``incidents``: per arm and class, the failed attempts, the hours waited after them (backoff or
Retry-After, summed: what the failures cost the arm's episodes in wall-clock time, episodes
waiting side by side each counting their own), the episodes that ended in error, and the first and
last time the class was seen. ``incident_timeline``: the same counts per bin of the run's
wall-clock time, from the run's first episode start: 10-minute bins for a run of up to
``LONG_RUN_H`` hours, hour bins beyond.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.dataset as ds

from analysis import figures
from analysis.load import GROUP, Traces
from analysis.metrics import arms_of
from analysis.sections import Built, Context, Section, drawn

LONG_RUN_H = 6.0  # runs longer than this are binned by the hour, shorter ones by 10 minutes
KEYS = [*GROUP, "arm"]


def failures(traces: Traces) -> pd.DataFrame:
    """Every retried failure the runs' steps recorded: run, model, condition, arm, episode, step,
    ``error_class``, ``at`` (UTC) and ``waited_s``; only the steps that had one are read."""
    columns = [*GROUP, "episode_id", "step", "failures"]
    parts = []
    for rs in traces.steps:
        table = rs.dataset.to_table(columns=columns, filter=ds.field("failures").is_valid())
        if table.num_rows:
            part = table.to_pandas()
            part["run"] = part["run"].fillna(rs.name).replace("", rs.name)
            parts.append(part)
    rows = []
    for part in parts:
        for r in part.itertuples(index=False):
            for f in json.loads(r.failures):
                rows.append({"run": r.run, "model_name": r.model_name, "condition": r.condition,
                             "episode_id": r.episode_id, "step": r.step, "error_class": f["class"],
                             "at": f["at"], "waited_s": float(f.get("waited_s") or 0.0)})
    out = pd.DataFrame(rows, columns=[*GROUP, "episode_id", "step", "error_class", "at", "waited_s"])
    out["condition"] = out["condition"].fillna("baseline")
    out["at"] = pd.to_datetime(out["at"], utc=True, format="ISO8601")
    out["arm"] = arms_of(traces, out) if not out.empty else pd.Series(dtype="object")
    return out


def _errors(traces: Traces) -> pd.DataFrame:
    e = traces.errors
    out = pd.DataFrame({"run": e["run"], "model_name": e["model_name"],
                        "condition": e["condition"].fillna("baseline"),
                        "error_class": e["error_class"].fillna("unknown"),
                        "at": pd.to_datetime(e["finished_at"], utc=True)})
    out["arm"] = arms_of(traces, out) if not out.empty else pd.Series(dtype="object")
    return out


def run_spans(traces: Traces) -> pd.DataFrame:
    """Each run's wall-clock span (first episode start, last episode end, errors included) and
    the bin width its timeline uses, in minutes."""
    eps = pd.concat([traces.episodes[["run", "started_at", "finished_at"]],
                     traces.errors[["run", "started_at", "finished_at"]]], ignore_index=True)
    span = eps.groupby("run").agg(start=("started_at", "min"), end=("finished_at", "max"))
    hours = (span["end"] - span["start"]).dt.total_seconds() / 3600
    span["bin_minutes"] = [60 if h > LONG_RUN_H else 10 for h in hours.fillna(0)]
    return span


def _binned(events: pd.DataFrame, spans: pd.DataFrame) -> pd.Series:
    start = events["run"].map(spans["start"])
    width = pd.to_timedelta(events["run"].map(spans["bin_minutes"]), unit="min")
    # an event before the run's first recorded start (a resumed run's earlier part) falls in bin 0
    k = ((events["at"] - start) // width).clip(lower=0)
    return start + k * width


def _ordered(t: pd.DataFrame, traces: Traces, by: list[str]) -> pd.DataFrame:
    order = {a: i for i, a in enumerate(traces.arms)}
    t = t.assign(_o=t["arm"].map(order).fillna(len(order)))
    return t.sort_values(["_o", "arm", *by], kind="stable").drop(columns="_o").reset_index(drop=True)


def incidents(traces: Traces, fails: pd.DataFrame) -> pd.DataFrame:
    """Per arm and class: failed attempts, hours waited, episodes ended in error, first and last seen."""
    errs = _errors(traces)
    f = fails.groupby([*KEYS, "error_class"]).agg(failures=("at", "size"), waited_h=("waited_s", "sum"),
                                                 f_first=("at", "min"), f_last=("at", "max"))
    f["waited_h"] = f["waited_h"] / 3600
    e = errs.groupby([*KEYS, "error_class"]).agg(error_episodes=("at", "size"), e_first=("at", "min"),
                                                e_last=("at", "max"))
    t = f.join(e, how="outer").reset_index()
    if t.empty:
        return pd.DataFrame(columns=[*KEYS, "error_class", "failures", "waited_h", "error_episodes",
                                     "first_at", "last_at"])
    t["failures"] = t["failures"].fillna(0).astype(int)
    t["waited_h"] = t["waited_h"].fillna(0.0)
    t["error_episodes"] = t["error_episodes"].fillna(0).astype(int)
    t["first_at"] = t[["f_first", "e_first"]].min(axis=1)
    t["last_at"] = t[["f_last", "e_last"]].max(axis=1)
    t = t[[*KEYS, "error_class", "failures", "waited_h", "error_episodes", "first_at", "last_at"]]
    return _ordered(t, traces, ["error_class"])


def timeline(traces: Traces, fails: pd.DataFrame) -> pd.DataFrame:
    """Per arm, bin of the run's wall-clock time and class: failed attempts, hours waited, episodes
    ended in error. Only bins with something in them have rows."""
    errs = _errors(traces)
    cols = [*KEYS, "bin_start", "bin_minutes", "error_class", "failures", "waited_h", "error_episodes"]
    if fails.empty and errs.empty:
        return pd.DataFrame(columns=cols)
    spans = run_spans(traces)
    f = fails.assign(bin_start=_binned(fails, spans)) if not fails.empty else fails.assign(bin_start=None)
    e = errs.assign(bin_start=_binned(errs, spans)) if not errs.empty else errs.assign(bin_start=None)
    by = [*KEYS, "bin_start", "error_class"]
    fc = f.groupby(by).agg(failures=("at", "size"), waited_h=("waited_s", "sum"))
    fc["waited_h"] = fc["waited_h"] / 3600
    ec = e.groupby(by).agg(error_episodes=("at", "size"))
    t = fc.join(ec, how="outer").reset_index()
    t["failures"] = t["failures"].fillna(0).astype(int)
    t["waited_h"] = t["waited_h"].fillna(0.0)
    t["error_episodes"] = t["error_episodes"].fillna(0).astype(int)
    t["bin_minutes"] = spans["bin_minutes"].reindex(t["run"]).to_numpy()
    return _ordered(t[cols], traces, ["bin_start", "error_class"])


# ---- section -------------------------------------------------------------------------------------

def _incidents(ctx: Context) -> Built | None:
    fails = failures(ctx.traces)
    summary = incidents(ctx.traces, fails)
    if summary.empty:
        return None  # nothing failed: no section
    bins = timeline(ctx.traces, fails)
    return Built({"incidents": summary, "incident_timeline": bins},
                 drawn(incident_timeline=(bins, lambda: figures.incident_timeline(bins))))


INCIDENTS_SECTION = Section(
    "incidents", "Incidents",
    "The run's own incident log, per arm (run, model, condition) and failure class as litellm names it "
    "(`RateLimitError`, `InternalServerError`, `ServiceUnavailableError`, `Timeout`, `APIConnectionError`, "
    "`BatchRequestFailed`, ...). `failures`: attempts of a model call that failed and were retried (the "
    "steps' `failures` column; a call counts each of its failed attempts); `waited_h`: the hours waited "
    "after them before the next attempt (backoff, or the provider's Retry-After), summed over the "
    "arm's episodes, each waiting episode counting its own wait (episodes waiting side by side add up, "
    "so this is the episodes' time lost, not the run's); `error_episodes`: episodes that ended in "
    "`error` with that class (left out of every other metric); `first_at` and `last_at`: when the class "
    "was first and last seen (UTC). **Timeline**: the same per bin of the run's wall-clock time, counted "
    "from its first episode's start: 10-minute bins for a run of up to 6 hours, hour bins beyond "
    "(`bin_minutes`). Runs recorded before the steps' `failures` column show their error episodes only. "
    "No section when nothing failed.",
    _incidents,
)
