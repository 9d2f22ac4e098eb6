"""Format failures against decision failures: did an arm's replies give an action at all, and were
the actions it gave good ones?

A newcomer whose model never acts (every reply unreadable, or cut off before its action) sees the
same zero solves as one whose model acts badly. This table tells the two apart per arm, and the
headline names an arm that gave no valid action at all: that is a pipeline to check (the prompt,
the reply parser, the output cap), not a model's score.

**Definitions used** (docs/report.md, *Action validity*):

- a step's action is **valid** when the reply it came from gave an action (the step's ``action``
  is set); a step with no valid action is a **format failure** (an invalid reply played as a
  no-op, under ``invalid_output: noop``);
- ``invalid_calls`` counts every model call whose reply gave no action, the episodes'
  ``parse_failures``: under ``requery`` or ``reask`` such calls are asked again within one step
  (and ``requery_limit`` of them in a row end the episode ``parse_failed``), so they show here
  and not as steps;
- a **decision failure** is a valid action after which the oracle action distance was not lower
  than before: it either **lost ground** (the distance rose, or the goal became unreachable:
  the step's ``outcome`` is ``wasted``) or **wasted a step** (the distance stayed the same:
  ``neutral``). The oracle distance counts every action, turns included, so each action of a
  shortest plan lowers it by exactly one: a valid action that did not was on no shortest plan.
"""

from __future__ import annotations

import pandas as pd

from analysis.load import ALL, Traces
from analysis.metrics import order_arms, with_pooled
from analysis.sections import Built, Context, Section
from analysis.steps import StepTable

COLUMNS = ["arm", "steps", "valid_steps", "format_failures", "format_failure_share", "invalid_calls",
           "decision_failures", "decision_failure_share", "lost_ground", "wasted_steps"]


def action_validity(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Per arm (and pooled over the model arms): steps with and without a valid action, the
    calls whose reply gave none, and the valid actions that lost ground or wasted a step."""
    t = st.per_arm("count(*) AS steps, count(action) AS valid_steps, "
                   "count(*) FILTER (WHERE action IS NULL) AS format_failures, "
                   "count(*) FILTER (WHERE action IS NOT NULL AND outcome = 'wasted') AS lost_ground, "
                   "count(*) FILTER (WHERE action IS NOT NULL AND outcome = 'neutral') AS wasted_steps")
    eps = with_pooled(traces.episodes, traces.references)
    calls = eps.assign(invalid_calls=eps["parse_failures"].fillna(0) if "parse_failures" in eps else 0)
    calls = calls.groupby("arm", sort=False)["invalid_calls"].sum().astype(int).reset_index()
    # an arm whose episodes took no step at all (every reply refused under requery) has calls only
    t = calls.merge(t, on="arm", how="left")
    for c in ("steps", "valid_steps", "format_failures", "lost_ground", "wasted_steps"):
        t[c] = t[c].fillna(0).astype(int)
    t["decision_failures"] = t["lost_ground"] + t["wasted_steps"]
    t["format_failure_share"] = t["format_failures"] / t["steps"].where(t["steps"] > 0)
    t["decision_failure_share"] = t["decision_failures"] / t["valid_steps"].where(t["valid_steps"] > 0)
    return order_arms(t[COLUMNS], traces)


def no_valid_action(table: pd.DataFrame) -> list[dict]:
    """The arms (never the pooled row) that tried and gave no valid action at all: their steps
    and the calls whose reply gave none."""
    arms = table[(table["arm"] != ALL) & (table["valid_steps"] == 0)
                 & ((table["steps"] > 0) | (table["invalid_calls"] > 0))]
    return [{"arm": r.arm, "steps": int(r.steps), "invalid_calls": int(r.invalid_calls)} for r in arms.itertuples()]


def warnings(flagged: list[dict]) -> list[str]:
    """One sentence per arm with no valid action, for the top of the summary."""
    out = []
    for f in flagged:
        tried = f"{f['steps']} steps" if f["steps"] else f"{f['invalid_calls']} model calls"
        out.append(f"arm {f['arm']} produced no valid action in {tried}: check its pipeline (its replies in "
                   "`gridbench view`, the reply format, the output cap) before reading its scores as the model's.")
    return out


# ---- sections ------------------------------------------------------------------------------------

def _validity(ctx: Context) -> Built:
    return Built({"action_validity": action_validity(ctx.traces, ctx.steps)})


VALIDITY_SECTION = Section(
    "validity", "Action validity: format failures and decision failures",
    "Whether an arm's replies gave an action at all, and whether the actions it gave were good ones. "
    "A step's action is **valid** when its reply gave an action; a step with none is a **format "
    "failure** (`format_failures`, an invalid reply played as a no-op; `format_failure_share` of the "
    "steps). `invalid_calls` counts every model call whose reply gave no action (the episodes' "
    "`parse_failures`), including calls asked again within a step under `requery` or `reask`. A "
    "**decision failure** is a valid action after which the oracle action distance was not lower than "
    "before: it **lost ground** (`lost_ground`: the distance rose, or the goal became unreachable) or "
    "**wasted a step** (`wasted_steps`: the distance stayed the same); `decision_failure_share` is of the "
    "valid steps. The oracle distance counts every action, turns included, so every action of a "
    "shortest plan lowers it by one: a valid action that did not was on no shortest plan. An arm with "
    "no valid action at all is named first in the summary: its zero is a pipeline to check, not a "
    "model's score.",
    _validity,
)
