"""Which protocol each arm ran, and which comparisons set arms side by side whose protocols differ
in more than the thing compared.

An arm's protocol is the resolved protocol its episodes carry (the ``protocol`` column, one JSON
per arm; an arm with several is shown with each). Two comparisons are checked:

- **models**: arms of one run and condition, compared model against model. Their protocols
  should be the same; a difference (the study's ablation gives each model its own thinking
  settings, for instance) is a confound, and each differing field is named.
- **conditions**: a condition against its run's baseline for the same model (the *Ablations*
  table). It should differ in the condition's own field only; any other field is named.

The baseline of a run is the condition that changes nothing (``changed`` null in the run's
manifest), else the one named ``baseline``. A reference (a built-in agent) calls no model: its row
shows only the episode loop's fields and its actions (``REFERENCE_FIELDS``), and it is never one side of a
**models** comparison.
"""

from __future__ import annotations

import json
from itertools import combinations

import pandas as pd

from agents.protocol import LATER_FIELDS
from analysis.load import Traces, manifest
from analysis.sections import Built, Context, Section
from env.variants import PROJECTION

# the fields the arms table shows, in this order; every other field is compared too
SHOWN = ("style", "prompt", "observation", "context", "history_frames", "icl_example", "conversation",
         "action_space", "querying", "invalid_output", "feedback", "stall_window", "step_cap_factor", "thinking",
         "effort", "thinking_budget", "max_output_tokens", "temperature", *LATER_FIELDS)
BASELINE_NAME = "baseline"
# what a reference (a built-in agent) takes from its protocol: the episode loop's own rules and the
# actions it may take (with DROP the oracle's distances change too). It calls no model, so the other
# shown fields (prompt, observation, thinking, output cap, ...) are left blank for it: it was never
# limited by them.
REFERENCE_FIELDS = ("style", "stall_window", "step_cap_factor", "actions")


def own_view_first(eps: pd.DataFrame) -> pd.DataFrame:
    """The episodes with projection twins last: those have an observation and render of their own
    (docs/variants.md#projection-twins), so an arm's protocol is read from an episode shown as the
    arm shows its mazes."""
    if "variant_kind" not in eps:
        return eps
    return eps.sort_values("variant_kind", key=lambda kind: kind.eq(PROJECTION), kind="stable")


def protocol_of(text: object) -> dict:
    try:
        value = json.loads(str(text))
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def arm_protocols(traces: Traces) -> pd.DataFrame:
    """One row per arm and protocol: the shown fields, the protocol hash and the serving."""
    eps = traces.episodes
    if eps.empty or "protocol" not in eps:
        return pd.DataFrame(columns=["arm", *(f for f in SHOWN if f not in LATER_FIELDS), "protocol_hash", "serving",
                                     "episodes"])
    references = set(traces.references)
    serving = eps["serving"] if "serving" in eps else pd.Series([None] * len(eps), index=eps.index)
    rows = []
    for (arm, hash_, text), g in eps.assign(serving=serving).groupby(["arm", "protocol_hash", "protocol"],
                                                                   sort=False, dropna=False):
        p = protocol_of(text)
        shown = REFERENCE_FIELDS if arm in references else SHOWN
        # a later field is left out of a protocol's JSON at its default (agents.protocol.LATER_FIELDS)
        rows.append({"arm": arm, **{f: p.get(f, LATER_FIELDS.get(f)) if f in shown else None for f in SHOWN},
                     "protocol_hash": hash_,
                     "serving": g["serving"].dropna().iloc[0] if g["serving"].notna().any() else None,
                     "episodes": len(g)})
    out = pd.DataFrame(rows)
    # a later field is a column only where some arm moved it off its default, so reports of runs
    # from before it keep their tables
    out = out.drop(columns=[f for f, default in LATER_FIELDS.items() if (out[f].dropna() == default).all()])
    for f in SHOWN:  # a blank cell (a reference's) must not turn a column of counts into floats
        if f not in out:
            continue
        known = out[f].dropna()
        if len(known) and all(isinstance(v, int) and not isinstance(v, bool) for v in known):
            out[f] = out[f].astype("Int64")
    order = {a: i for i, a in enumerate(traces.arms)}
    return out.sort_values("arm", key=lambda s: s.map(order)).reset_index(drop=True)


def baselines(traces: Traces) -> dict[str, str]:
    """Each run's baseline condition."""
    declared = {}
    for d in traces.run_dirs:
        m = manifest(d)
        for c in (m.get("sweep") or {}).get("conditions") or []:
            if c.get("changed") is None and not c.get("models"):
                declared[str(m.get("run"))] = str(c.get("name"))
    return {str(run): declared.get(str(run), BASELINE_NAME) for run in traces.episodes["run"].unique()}


def differing(a: dict, b: dict) -> list[str]:
    """The fields in which two protocols differ (the seed aside: repeats vary it); a later field
    left out of one is at its default there."""
    a, b = {**LATER_FIELDS, **a}, {**LATER_FIELDS, **b}
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k) and k != "seed"]


def comparison_flags(traces: Traces) -> pd.DataFrame:
    """Every compared pair of arms whose protocols differ beyond what is compared."""
    eps = traces.episodes
    if eps.empty:
        return pd.DataFrame(columns=["comparison", "arm", "against", "differs_in"])
    proto = {k: protocol_of(g["protocol"].iloc[0])
             for k, g in own_view_first(eps).groupby(["run", "model_name", "condition"], sort=False)}
    arm = {k: g["arm"].iloc[0] for k, g in eps.groupby(["run", "model_name", "condition"], sort=False)}
    rows = []
    # model against model only: a reference calls no model, its protocol has nothing to confound
    models = eps[~eps["arm"].isin(traces.references)]
    for (run, condition), g in models.groupby(["run", "condition"], sort=False):
        for m1, m2 in combinations(sorted(g["model_name"].unique()), 2):
            fields = differing(proto[(run, m1, condition)], proto[(run, m2, condition)])
            if fields:
                rows.append({"comparison": "models", "arm": arm[(run, m1, condition)],
                             "against": arm[(run, m2, condition)], "differs_in": ", ".join(fields)})
    base = baselines(traces)
    for (run, model, condition), p in proto.items():  # one field is the condition's own
        b = base.get(str(run))
        if condition == b or (run, model, b) not in proto:
            continue
        fields = differing(p, proto[(run, model, b)])
        if len(fields) > 1:
            rows.append({"comparison": "conditions", "arm": arm[(run, model, condition)],
                         "against": arm[(run, model, b)], "differs_in": ", ".join(fields)})
    return pd.DataFrame(rows, columns=["comparison", "arm", "against", "differs_in"])


def flag_warnings(flags: pd.DataFrame) -> list[str]:
    """One sentence per kind of confounded comparison, for the report's summary."""
    out = []
    models = flags[flags["comparison"] == "models"] if not flags.empty else flags
    if not models.empty:
        fields = sorted({f for v in models["differs_in"] for f in v.split(", ")})
        out.append(f"{len(models)} model comparison(s) set arms side by side whose protocols differ "
                   f"(in {', '.join(fields)}): see the protocols section; model differences there are "
                   "not the model's alone.")
    conds = flags[flags["comparison"] == "conditions"] if not flags.empty else flags
    if not conds.empty:
        out.append(f"{len(conds)} condition(s) differ from their baseline in more than one field: "
                   + "; ".join(f"{a} ({d})" for a, d in zip(conds["arm"], conds["differs_in"], strict=True)) + ".")
    return out


# ---- sections ------------------------------------------------------------------------------------

def _protocols(ctx: Context) -> Built:
    return Built({"protocols": arm_protocols(ctx.traces), "comparison_flags": comparison_flags(ctx.traces)})


PROTOCOLS_SECTION = Section(
    "protocols", "Protocols",
    "The protocol each arm ran (`protocols`: its main fields, the protocol hash of docs/protocol.md, and "
    "`serving`, how a served model was served; the full protocol is each episode's `protocol` column), "
    "and the comparisons that set arms side by side whose protocols differ in more than what is "
    "compared (`comparison_flags`): `models`, arms of one run and condition that differ in any field "
    "(a model comparison should differ in the model only; the study's ablation gave each model its own "
    "thinking settings), and `conditions`, a condition that differs from its run's baseline in more "
    "than its own field (the baseline is the condition that changes nothing). The summary names both. "
    "A reference (a built-in agent) calls no model: its row shows only the episode loop's fields "
    "(`style`, `stall_window`, `step_cap_factor`), and it is never one side of a `models` comparison.",
    _protocols,
)
