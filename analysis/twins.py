"""Twins: each variant kind against the mazes it is the twin of, paired by source maze; the
invariance check of the isomorphic kinds and of the projections; and which of the study's failure
modes the twins point to.

A twin episode runs a variant maze (``variant`` set, ``twin_of`` its source's id); an original
runs a maze that is no variant. Per arm and variant kind (and family: under ``multinet-r1``
``mirror-tb`` is exact and ``mirror-lr`` is not), every source maze that the arm ran both as the
original and as a twin of that kind gives one difference: the mean over the twin episodes (every
variant of the kind, every repeat) minus the mean over the original's episodes (every repeat).
The effect is the mean of those differences over the source mazes, with a 95% bootstrap interval
that resamples source mazes (``analysis.stats.mean_ci``: 9,999 replicates, fixed seed). A twin
whose ``twin_of_checksum`` is not the checksum of the original the arm ran is left unpaired.
Projection twins (the same maze shown another way: ``env.variants.projection``) give one row per
projection, never pooled: a 3D view and the text map are different interfaces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import figures
from analysis.load import GROUP, Traces
from analysis.metrics import order_arms
from analysis.sections import Built, Context, Section
from analysis.stats import NO_VARIATION, mean_ci
from env.mechanics import removal_twins
from env.variants import PROJECTION, record_of

OUTCOMES = {"progress": "progress_action", "solve_rate": "solved"}
EXACT, NEAR = "isomorphic", "near-isomorphic"
# kinds whose variants are each a row of their own rather than pooled over the kind
PER_VARIANT = (PROJECTION,)


def originals(eps: pd.DataFrame) -> pd.DataFrame:
    """The episodes on mazes that are no variant."""
    return eps[eps["variant"].isna()] if "variant" in eps else eps


def _maze_means(eps: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return eps.assign(solved=eps["solved"].astype(float)).groupby(keys, sort=True).agg(
        progress_action=("progress_action", "mean"), solved=("solved", "mean"),
        checksum=("maze_checksum", "first"))


def _changed(traces: Traces, maze_ids) -> str:
    """What the twins of a group changed, in the words of their records: the most common
    description, and how many other descriptions there are."""
    said = pd.Series([", ".join(r["changed"]) for m in maze_ids
                      if (maze := traces.mazes.get(m)) is not None and (r := record_of(maze)) and r.get("changed")])
    if said.empty:
        return ""
    counts = said.value_counts()
    top = str(counts.index[0])
    return top if len(counts) == 1 else f"{top} (and {len(counts) - 1} other changes)"


def paired_effects(traces: Traces) -> pd.DataFrame:
    """Per arm, variant kind and family: twin minus original over the source mazes run both ways."""
    eps = traces.episodes
    if "twin_of" not in eps or eps["twin_of"].isna().all():
        return pd.DataFrame()
    base = _maze_means(originals(eps), ["arm", "maze_id"])
    twins = eps[eps["twin_of"].notna()]
    twins = twins.assign(_each=twins["variant"].where(twins["variant_kind"].isin(PER_VARIANT), ""))
    rows = []
    for (arm, kind, family, _), g in twins.groupby(["arm", "variant_kind", "variant_family", "_each"], sort=True,
                                                   dropna=False):
        per = _maze_means(g.assign(maze_checksum=g["twin_of_checksum"]), ["arm", "twin_of"])
        per.index = per.index.set_names(["arm", "maze_id"])
        both = per.merge(base, left_index=True, right_index=True, suffixes=("_twin", "_orig"))
        known = both["checksum_twin"].notna() & both["checksum_orig"].notna() & (both["checksum_orig"] != "")
        both = both[~known | (both["checksum_twin"] == both["checksum_orig"])]
        row = {"arm": arm, "kind": kind, "family": family,
               "variants": ", ".join(sorted(g["variant"].dropna().unique())), "mazes": len(both),
               "twin_episodes": int(g["twin_of"].isin(both.index.get_level_values("maze_id")).sum())}
        for name, col in OUTCOMES.items():
            row[f"original_{name}"] = both[f"{col}_orig"].mean() if len(both) else np.nan
            row[f"twin_{name}"] = both[f"{col}_twin"].mean() if len(both) else np.nan
            row.update(mean_ci(both[f"{col}_twin"] - both[f"{col}_orig"]).as_dict(f"{name}_diff"))
        # the control's own level (execution: a model that fails the control too), mazes resampled
        row.update(mean_ci(both["progress_action_twin"]).as_dict("twin_progress_level"))
        row["changed"] = _changed(traces, g["maze_id"].unique())
        rows.append(row)
    return order_arms(pd.DataFrame(rows), traces)


def _bound(t, name: str, side: str):
    """An interval's end for the rules below. Where every source maze gave the same difference the
    report prints no interval (``NO_VARIATION``), but the rules read that common value as both ends,
    as the interval would have: the data put no uncertainty around it."""
    flat = t[f"{name}_ci_note"] == NO_VARIATION
    if isinstance(t, pd.DataFrame):
        return t[f"{name}_ci_{side}"].where(~flat, t[name])
    return t[name] if flat else t[f"{name}_ci_{side}"]


def _excludes_zero(t: pd.DataFrame, name: str) -> pd.Series:
    return (_bound(t, name, "low") > 0) | (_bound(t, name, "high") < 0)


def invariance(effects: pd.DataFrame) -> pd.DataFrame:
    """The isomorphic and near-isomorphic kinds, each flagged when an interval excludes 0."""
    if effects.empty:
        return effects
    t = effects[effects["family"].isin([EXACT, NEAR])].copy()
    t["exact"] = t["family"] == EXACT
    t["flagged"] = _excludes_zero(t, "progress_diff") | _excludes_zero(t, "solve_rate_diff")
    cols = [*[c for c in GROUP if c in t], "arm", "kind", "family", "exact", "variants", "mazes",
            "original_progress", "twin_progress", "progress_diff", "progress_diff_ci_low", "progress_diff_ci_high",
            "progress_diff_ci_note", "original_solve_rate", "twin_solve_rate", "solve_rate_diff",
            "solve_rate_diff_ci_low", "solve_rate_diff_ci_high", "solve_rate_diff_ci_note", "flagged"]
    return t[cols].reset_index(drop=True)


# ---- projections ----------------------------------------------------------------------------------

INTERFACE = "reads the interface, not the task"
INVARIANT = "invariant to the projection"
NO_READING = "no interval (fewer than two mazes)"


def view_of(protocol: dict) -> str:
    """How a protocol (its JSON as a run records it) shows a maze: ``2d``, a 3D camera's name or
    ``text``, with ``+ text`` where a frame comes with the text."""
    observation = protocol.get("observation")
    render = protocol.get("render") or {}
    frame = render.get("camera") if render.get("backend") == "mujoco3d" else "2d"
    if observation == "text":
        return "text"
    return f"{frame} + text" if observation == "image+text" else str(frame or "unknown")


def _own_views(traces: Traces) -> dict[str, str]:
    """Per arm, how its originals are shown (their protocol's view)."""
    import json

    eps = originals(traces.episodes)
    if "protocol" not in eps:
        return {}
    out = {}
    for arm, g in eps.groupby("arm", sort=False):
        try:
            out[str(arm)] = view_of(json.loads(str(g["protocol"].iloc[0])))
        except ValueError:
            continue
    return out


def projection_invariance(effects: pd.DataFrame, traces: Traces) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per arm and projection: the paired difference against the arm's own view and its reading;
    per arm: the reading over its projections). A projection moves the score when the 95% interval
    of the difference in action progress or in solve rate excludes 0."""
    if effects.empty or PROJECTION not in set(effects["kind"]):
        return pd.DataFrame(), pd.DataFrame()
    t = effects[effects["kind"] == PROJECTION].copy()
    views = _own_views(traces)
    t["projection"] = t["variants"].str.removeprefix(f"{PROJECTION}-")
    t["against"] = t["arm"].map(views).fillna("the arm's own")
    t["moves"] = _excludes_zero(t, "progress_diff") | _excludes_zero(t, "solve_rate_diff")
    defined = _bound(t, "progress_diff", "low").notna() | _bound(t, "solve_rate_diff", "low").notna()
    t["reading"] = np.where(t["moves"], INTERFACE, np.where(defined, INVARIANT, NO_READING))
    cols = [*[c for c in GROUP if c in t], "arm", "projection", "against", "mazes", "original_progress",
            "twin_progress", "progress_diff", "progress_diff_ci_low", "progress_diff_ci_high", "progress_diff_ci_note",
            "original_solve_rate", "twin_solve_rate", "solve_rate_diff", "solve_rate_diff_ci_low",
            "solve_rate_diff_ci_high", "solve_rate_diff_ci_note", "moves", "reading"]
    table = t[cols].reset_index(drop=True)
    summary = []
    for arm, g in table.groupby("arm", sort=False):
        moved = g[g["moves"]]
        if len(moved):
            said = "; ".join(f"{r.projection}: progress {r.progress_diff:+.2f}, solve rate {r.solve_rate_diff:+.2f}"
                             for r in moved.itertuples())
            reading = f"{INTERFACE} (against {g['against'].iloc[0]}: {said})"
        elif (g["reading"] == INVARIANT).all():
            reading = f"{INVARIANT} ({', '.join(g['projection'])} against {g['against'].iloc[0]})"
        else:
            reading = f"no reading: {', '.join(g.loc[g['reading'] == NO_READING, 'projection'])} {NO_READING}"
        summary.append({"arm": arm, "against": g["against"].iloc[0], "projections": ", ".join(g["projection"]),
                        "moves_with": ", ".join(moved["projection"]), "reading": reading})
    return table, order_arms(pd.DataFrame(summary), traces)


# ---- by mechanism ---------------------------------------------------------------------------------

# each removal twin and the label of the mechanism it takes out (env.mechanics)
REMOVED_MECHANISM = {twin: m.label for twin, m in removal_twins().items()}


def by_mechanism(effects: pd.DataFrame) -> pd.DataFrame:
    """Solve rate and progress per arm and mechanism kind on the mazes that have it (``with_``) and
    on their removal twins (``without_``), and the mechanism's effect, with minus without: the rows
    of ``paired_effects`` for the removal kinds, their difference and interval turned round (the
    same maze-paired bootstrap)."""
    if effects.empty:
        return pd.DataFrame()
    t = effects[effects["kind"].isin(list(REMOVED_MECHANISM))]
    if t.empty:
        return pd.DataFrame()
    rows = []
    for r in t.to_dict("records"):
        row = {**{c: r[c] for c in GROUP if c in r}, "arm": r["arm"], "mechanism": REMOVED_MECHANISM[r["kind"]],
               "twin": r["kind"], "mazes": r["mazes"]}
        for name in OUTCOMES:
            row[f"with_{name}"] = r[f"original_{name}"]
            row[f"without_{name}"] = r[f"twin_{name}"]
            # + 0.0: a difference of 0 turned round reads 0, not -0
            row[f"{name}_effect"] = -r[f"{name}_diff"] + 0.0
            row[f"{name}_effect_ci_low"] = -r[f"{name}_diff_ci_high"] + 0.0
            row[f"{name}_effect_ci_high"] = -r[f"{name}_diff_ci_low"] + 0.0
            row[f"{name}_effect_ci_note"] = r[f"{name}_diff_ci_note"]
        rows.append(row)
    order = {m: i for i, m in enumerate(REMOVED_MECHANISM.values())}
    out = pd.DataFrame(rows)
    arms = {a: i for i, a in enumerate(dict.fromkeys(out["arm"]))}
    return out.sort_values(["arm", "mechanism"], key=lambda c: c.map(arms if c.name == "arm" else order),
                           kind="stable").reset_index(drop=True)


# ---- attribution -----------------------------------------------------------------------------------

DISCOVERY_SWITCH = "discovery (switch-gate)"
DISCOVERY_KEY = "discovery (key-door)"
ORDERING, RECOVERY, EXECUTION = "ordering", "recovery", "execution"
PRIOR = "key-door rests on the everyday prior"


@dataclass(frozen=True)
class Rule:
    kind: str  # the variant kind whose effect on action progress is read
    direction: str  # "raises" (interval above 0) or "lowers" (interval below 0)
    mode: str
    unless: tuple[str, ...] = ()  # kinds whose own rise explains this one (what the twin removes as well)
    why: str = ""


RULES = (
    Rule("no-switches", "raises", DISCOVERY_SWITCH),
    Rule("no-keys", "raises", DISCOVERY_KEY, ("no-distractors",),
         "removing the keys removes the decoy keys too: a rise that removing the distractors alone also gives "
         "is recovery's"),
    Rule("drop-link", "raises", ORDERING, ("no-switches", "no-keys"),
         "a dropped link is a mechanism removed: a rise that removing a whole mechanism also gives is discovery's"),
    Rule("no-distractors", "raises", RECOVERY),
    Rule("reskin", "lowers", PRIOR),
)
CONTROL = "control-none"


def _clears(row: pd.Series, direction: str) -> bool:
    low, high = _bound(row, "progress_diff", "low"), _bound(row, "progress_diff", "high")
    return bool(low > 0) if direction == "raises" else bool(high < 0)


def attribution(effects: pd.DataFrame, traces: Traces) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per arm: the modes the twins point to; per arm and rule: the evidence). Reads the action
    progress effects of ``paired_effects`` by the rules of ``RULES`` and the control rule."""
    if effects.empty:
        return pd.DataFrame(), pd.DataFrame()
    evidence, summary = [], []
    for arm, g in effects.groupby("arm", sort=False):
        by_kind = {k: r for k, r in zip(g["kind"], (row for _, row in g.iterrows()), strict=True)}
        cleared = {k: _clears(r, rule.direction) for rule in RULES if (k := rule.kind) in by_kind
                   for r in [by_kind[k]]}
        modes = []
        for rule in RULES:
            if rule.kind not in by_kind:
                continue
            r = by_kind[rule.kind]
            explained = [k for k in rule.unless if cleared.get(k)]
            hit = cleared[rule.kind] and not explained
            note = (f"explained by {', '.join(explained)}: {rule.why}" if cleared[rule.kind] and explained else
                    "" if hit else "interval does not clear 0" if pd.notna(_bound(r, "progress_diff", "low"))
                    else "no interval (fewer than two mazes)")
            evidence.append(_evidence(r, f"progress {rule.direction}", rule.mode, hit, note))
            modes += [rule.mode] if hit else []
        if CONTROL in by_kind:
            r = by_kind[CONTROL]
            low, level_high = _bound(r, "progress_diff", "low"), _bound(r, "twin_progress_level", "high")
            defined = pd.notna(low) and pd.notna(level_high)
            hit = bool(defined and not low > 0 and level_high < 1)
            note = ("" if hit else "no interval (fewer than two mazes)" if not defined else
                    "the control's progress is above the original's" if low > 0 else
                    "the control's progress is not below 1")
            evidence.append(_evidence(r, "control not above the original, and below 1", EXECUTION, hit, note))
            modes += [EXECUTION] if hit else []
        summary.append({"arm": arm, "attributed": ", ".join(modes) if modes else "not attributed",
                        "twin_kinds": ", ".join(sorted(by_kind))})
    return order_arms(pd.DataFrame(summary), traces), order_arms(pd.DataFrame(evidence), traces)


def _evidence(r: pd.Series, reads: str, mode: str, hit: bool, note: str) -> dict:
    return {"arm": r["arm"], "kind": r["kind"], "reads": reads, "mode": mode, "mazes": r["mazes"],
            "progress_diff": r["progress_diff"], "progress_diff_ci_low": r["progress_diff_ci_low"],
            "progress_diff_ci_high": r["progress_diff_ci_high"], "progress_diff_ci_note": r["progress_diff_ci_note"],
            "twin_progress": r["twin_progress"],
            "twin_progress_level_ci_high": r["twin_progress_level_ci_high"],
            "twin_progress_level_ci_note": r["twin_progress_level_ci_note"], "attributed": hit, "note": note}


# ---- sections ------------------------------------------------------------------------------------

def _effects(ctx: Context) -> pd.DataFrame:
    if "paired_effects" not in ctx.tables:
        ctx.tables["paired_effects"] = paired_effects(ctx.traces)
    return ctx.tables["paired_effects"]


def _paired(ctx: Context) -> Built | None:
    table = _effects(ctx)
    if table.empty:
        return None  # the runs hold no twins
    return Built({"paired_effects": table}, {"paired_effects": figures.paired_effects(table)})


def _invariance(ctx: Context) -> Built | None:
    table = invariance(_effects(ctx))
    if table.empty:
        return None
    return Built({"invariance": table})


def _projections(ctx: Context) -> Built | None:
    table, summary = projection_invariance(_effects(ctx), ctx.traces)
    if table.empty:
        return None
    return Built({"projection_reading": summary, "projection_invariance": table})


def _by_mechanism(ctx: Context) -> Built | None:
    table = by_mechanism(_effects(ctx))
    if table.empty:
        return None
    return Built({"mechanisms": table})


def _attribution(ctx: Context) -> Built | None:
    summary, evidence = attribution(_effects(ctx), ctx.traces)
    if summary.empty:
        return None
    return Built({"attribution": summary, "attribution_evidence": evidence})


_PAIRING = ("paired by source maze: per maze the twins' mean (every variant of the kind, every repeat) minus the "
            "original's mean (every repeat), then the mean over the mazes run both ways (`mazes`), with a 95% "
            "bootstrap interval resampling source mazes (9,999 replicates, fixed seed)")

PAIRED_SECTION = Section(
    "paired", "Paired effects of the twins",
    f"Each variant kind against its originals, per arm, in action progress and solve rate, {_PAIRING}. "
    "`kind` and `family` are the variant's (docs/variants.md); `variants` the variant names behind the row; "
    "`changed` what the twins changed, in their records' words (the most common description). A twin whose "
    "`twin_of_checksum` is not the original's checksum is left unpaired. `twin_progress_level` is the twins' "
    "own mean progress over the same mazes with its interval (the control rule of *Attribution* reads it).",
    _paired,
)

INVARIANCE_SECTION = Section(
    "invariance", "Invariance",
    "The rows of *Paired effects* for the isomorphic kinds (rotations, mirrors, recolouring: the same task, "
    "the oracle's count unchanged) and the near-isomorphic ones (`exact` no: under `multinet-r1` a rotation or "
    "the left-right mirror starts facing east anyway, which may cost up to two turns). `flagged`: the 95% "
    "interval of the difference in action progress or in solve rate excludes 0. A flagged exact kind means "
    "the model (or the benchmark) reads something other than the task; a flagged near-isomorphic kind may "
    "also be the extra turns. This is a check of the benchmark and the model, never a failure mode.",
    _invariance,
)

PROJECTION_SECTION = Section(
    "projections", "Projection invariance",
    "The same maze shown another way: each projection twin (docs/variants.md#projection-twins: the 2D frame, "
    "a 3D view from above or through the agent's eyes, the text map alone; nothing else of the protocol "
    "changes) against the arm's own view of its originals (`against`), per arm and projection, in action "
    "progress and solve rate, paired by source maze: per maze the twin's mean (every repeat) minus the "
    "original's (every repeat), then the mean over the mazes run both ways (`mazes`), with a 95% bootstrap "
    "interval resampling source mazes (9,999 replicates, fixed seed), as every twin in *Paired effects*. `moves`: the 95% interval of the difference in action progress or "
    "in solve rate excludes 0 (where every maze gave the same difference, that value is read as both ends). "
    "**Reading (docs/report.md):** a model whose score moves with the projection is reading the interface, "
    f"not the task: `{INTERFACE}`; one whose every interval holds 0, `{INVARIANT}` (no difference this run "
    f"could see, not proof of none); `{NO_READING}` otherwise. `projection_reading` says it once per arm, "
    "with the projections that moved its score and by how much. A built-in agent reads the state, never the "
    "frame, so it is invariant by construction: a check of the pairing.",
    _projections,
)

MECHANISM_SECTION = Section(
    "mechanisms", "Solve and progress by mechanism kind",
    f"Per arm and mechanism kind ({', '.join(REMOVED_MECHANISM.values())}), solve rate and action progress "
    "on the mazes that have it (`with_`) and on the same mazes' removal twins (`without_`: `twin`, the mechanism taken out, docs/variants.md), and the mechanism's "
    "effect, with minus without: the rows of *Paired effects* for the removal kinds with their difference "
    "(twin minus original, paired by source maze, 95% bootstrap interval resampling source mazes) turned "
    "round. An effect below 0 "
    "is what the mechanism costs the arm; on the `discovery` set (one mechanism per maze, docs/generator.md) "
    "it compares each mechanism on one footing. Note that a removal also changes the optimal count "
    "(a shortcut's twin is longer, the others' shorter), which action progress is measured against.",
    _by_mechanism,
)

ATTRIBUTION_SECTION = Section(
    "attribution", "Attribution to the study's failure modes",
    "Which of the study's four failure modes (never worked out what a mechanism does: *discovery*; could not "
    "order the mechanisms: *ordering*; executed the wrong actions: *execution*; could not recover: *recovery*) "
    "the twins point to, per arm, from the action progress effects of *Paired effects*. **Rule used "
    "(docs/report.md):** `no-switches` raising progress (interval above 0) points to discovery of the "
    "switch-gate, `no-keys` raising it to discovery of the key-door, unless `no-distractors` raises it too (the "
    "keys removed take the decoy keys with them); `drop-link` raising it points to ordering, unless "
    "`no-switches` or `no-keys` raises it too (a dropped link is a mechanism removed); `no-distractors` "
    "raising it to recovery (wrong picks it could not undo); `control-none` (a length-matched maze without "
    "mechanisms) points to execution when the control's progress is not above the original's (the "
    "difference's interval does not lie above 0) and below 1 (the upper end of the control progress's "
    "interval under 1); `reskin` lowering it (interval below 0) says the key-door success rests on the "
    "everyday prior (a finding, not a mode). Isomorphic kinds are a benchmark check (*Invariance*), never a "
    "mode. An arm where no rule holds is `not attributed`. `attribution_evidence` gives every rule read, its "
    "interval and why it did not count (`note`).",
    _attribution,
)
