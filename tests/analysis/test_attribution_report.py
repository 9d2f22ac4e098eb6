"""`gridbench report` on the small attribution run (tests/conftest.py ``attribution_run``): the
paired, invariance, attribution, ranking and discovery sections are there, and each says of each
scripted agent what it was built to do (testing.attribution.FAILS)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

pytestmark = pytest.mark.slow

TITLES = ("Paired effects of the twins", "Invariance", "Attribution to the study's failure modes",
          "Ranking with a confidence", "Discovery timelines")


@pytest.fixture(scope="module")
def report(attribution_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("attribution-report")
    r = subprocess.run([sys.executable, "-m", "app.cli", "report", str(attribution_run), "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def table(report, name: str) -> pd.DataFrame:
    return pd.read_csv(report / f"{name}.csv")


def test_the_report_has_every_attribution_section(report):
    text = (report / "report.md").read_text()
    for title in TITLES:
        assert title in text, title
    assert "Rule used" in text  # the attribution names its rule


def test_each_agent_is_attributed_what_it_was_built_to_fail(report):
    said = table(report, "attribution").set_index("arm")["attributed"]
    assert said["oracle"] == "not attributed"
    assert said["never-toggle"] == "discovery (switch-gate)"
    assert "recovery" in said["colour-blind"].split(", ")
    assert "discovery (switch-gate)" not in said["colour-blind"]
    assert said["mirror-blind"] == "not attributed"


def test_invariance_flags_the_mirror_for_the_mirror_blind_agent_only(report):
    inv = table(report, "invariance")
    flagged = {(r.arm, r.kind) for r in inv.itertuples() if r.flagged}
    assert ("mirror-blind", "mirror") in flagged
    assert not {f for f in flagged if f[0] != "mirror-blind"}, flagged
    assert ("mirror-blind", "recolor") not in flagged
    mirror = inv[(inv["arm"] == "mirror-blind") & (inv["kind"] == "mirror")].iloc[0]
    assert mirror["progress_diff"] < 0 and mirror["exact"]


def test_ranking_pairs_every_two_agents_and_puts_the_oracle_ahead_in_progress(report):
    rank = table(report, "ranking")
    assert len(rank) == 6  # four agents, every pair once
    row = rank[((rank["arm_a"] == "oracle") & (rank["arm_b"] == "never-toggle"))
               | ((rank["arm_a"] == "never-toggle") & (rank["arm_b"] == "oracle"))].iloc[0]
    oracle_ahead = row["progress_diff"] if row["arm_a"] == "oracle" else -row["progress_diff"]
    assert oracle_ahead > 0 and row["progress_p_holm"] >= row["progress_p"]
    # the three originals with a switch-gate are solved by the oracle only: three discordant pairs
    oracle_only, never_only = ((row["a_only_solves"], row["b_only_solves"]) if row["arm_a"] == "oracle"
                               else (row["b_only_solves"], row["a_only_solves"]))
    assert (oracle_only, never_only) == (3, 0)


def test_discovery_shows_the_never_toggle_agent_meeting_switches_it_never_flips(report):
    found = table(report, "discovery").set_index(["arm", "kind"])
    never, oracle = found.loc[("never-toggle", "switch")], found.loc[("oracle", "switch")]
    assert never["contact_share"] > 0 and never["success_share"] == 0
    assert oracle["success_share"] > 0
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["discovery"]["never-toggle"]["switch"]["success"]["share"] == 0
