"""Paired effects, invariance and attribution on frames whose truth is built in (``twinfab``)."""

from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd
import pytest
import twinfab
from tracefab import episode_row, write_run

from analysis import twins
from analysis.load import load_runs


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    run = write_run(tmp_path_factory.mktemp("runs") / "twins", twinfab.episodes(), [])
    return load_runs([run], resolve_mazes=False)


@pytest.fixture(scope="module")
def effects(traces):
    return twins.paired_effects(traces)


def test_each_agent_is_attributed_what_it_was_built_to_fail(traces, effects):
    summary, evidence = twins.attribution(effects, traces)
    got = dict(zip(summary["arm"], summary["attributed"], strict=True))
    assert got == {"never-toggle": twins.DISCOVERY_SWITCH, "colour-blind": twins.RECOVERY,
                   "mirror-blind": "not attributed", "clumsy": twins.EXECUTION}
    ev = evidence.set_index(["arm", "kind"])
    # the colour-blind agent gains from no-keys too, but the decoys removed with the keys explain it
    row = ev.loc[("colour-blind", "no-keys")]
    assert row["progress_diff_ci_low"] > 0 and not row["attributed"] and "no-distractors" in row["note"]
    # the never-toggle agent gains from dropping the switch link: discovery's, not ordering's
    row = ev.loc[("never-toggle", "drop-link")]
    assert row["progress_diff_ci_low"] > 0 and not row["attributed"] and "no-switches" in row["note"]
    # the control: the never-toggle agent solves it (above its original), the clumsy one does not
    assert "above" in ev.loc[("never-toggle", "control-none"), "note"]
    assert ev.loc[("clumsy", "control-none"), "twin_progress_level_ci_high"] < 1


def test_invariance_flags_the_mirror_of_the_mirror_blind_agent_only(effects):
    inv = twins.invariance(effects)
    inv = inv[inv["arm"] != "clumsy"]  # random: an interval excludes 0 in 5% of its rows by chance
    flagged = set(map(tuple, inv.loc[inv["flagged"], ["arm", "kind", "family"]].to_numpy()))
    assert flagged == {("mirror-blind", "mirror", "isomorphic"), ("mirror-blind", "mirror", "near-isomorphic")}
    assert set(inv["family"]) == {"isomorphic", "near-isomorphic"}
    assert inv.loc[inv["family"] == "near-isomorphic", "exact"].eq(False).all()
    assert inv.loc[inv["family"] == "isomorphic", "exact"].all()


def test_a_paired_effect_is_the_mean_over_source_mazes_of_twin_minus_original_repeats_averaged(tmp_path):
    rows = []
    # m0: original 0.2 and 0.4 (mean 0.3), twins of two names 0.9, 0.7, 0.5 (mean 0.7): +0.4
    # m1: original 0.5, twin 0.6: +0.1; m2: a twin with no original; m3: a twin of another m3 (checksum)
    for maze, rep, prog in (("m0", 0, 0.2), ("m0", 1, 0.4), ("m1", 0, 0.5), ("m3", 0, 0.1)):
        rows.append(episode_row(maze_id=maze, repeat=rep, progress_action=prog, maze_checksum=f"c-{maze}"))
    for maze, name, rep, prog, chk in (("m0", "rotate-90", 0, 0.9, "c-m0"), ("m0", "rotate-180", 0, 0.7, "c-m0"),
                                       ("m0", "rotate-180", 1, 0.5, "c-m0"), ("m1", "rotate-90", 0, 0.6, "c-m1"),
                                       ("m2", "rotate-90", 0, 1.0, "c-m2"), ("m3", "rotate-90", 0, 1.0, "other")):
        rows.append(episode_row(maze_id=f"{maze}.{name}", repeat=rep, progress_action=prog, variant=name,
                                variant_kind="rotate", variant_family="isomorphic", twin_of=maze,
                                twin_of_checksum=chk, solved=prog == 1.0))
    traces = load_runs([write_run(tmp_path / "run", rows, [])], resolve_mazes=False)
    (row,) = twins.paired_effects(traces).to_dict("records")
    assert row["mazes"] == 2 and row["variants"] == "rotate-180, rotate-90" and row["twin_episodes"] == 4
    assert row["progress_diff"] == pytest.approx((0.4 + 0.1) / 2)
    assert row["original_progress"] == pytest.approx((0.3 + 0.5) / 2)
    assert row["solve_rate_diff"] == 0.0


def test_a_run_without_twins_has_no_twin_sections_and_renders(tmp_path):
    from analysis.report import build_report

    rows = [episode_row(model_name=m, maze_id=f"z{i}", progress_action=p, solved=p == 1.0)
            for m, p in (("a", 0.5), ("b", 1.0)) for i in range(3)]
    metrics = build_report([write_run(tmp_path / "plain", rows, [])], tmp_path / "report")
    assert not {"paired", "invariance", "attribution"} & set(metrics["definitions"])
    assert "ranking" in metrics["definitions"]


def test_the_twin_sections_render_in_markdown_and_html(tmp_path):
    from analysis.report import build_report

    run = write_run(tmp_path / "twins", twinfab.episodes(agents={"never-toggle": twinfab.never_toggles},
                                                        mazes=4, repeats=1), [])
    metrics = build_report([run], tmp_path / "report")
    assert {"paired", "invariance", "attribution"} <= set(metrics["definitions"])
    md, html = ((tmp_path / "report" / f"report.{x}").read_text() for x in ("md", "html"))
    for key, title in (("paired", "Paired effects of the twins"), ("invariance", "Invariance"),
                       ("attribution", "Attribution to the study's failure modes")):
        assert f"## {title}" in md and f"<h2 id='{key}'>" in html and escape(title) in html
    assert "paired_effects.png" in metrics["figures"]
    table = pd.DataFrame(metrics["tables"]["attribution"])
    assert table["attributed"].tolist() == [twins.DISCOVERY_SWITCH]
    assert np.isfinite(pd.DataFrame(metrics["tables"]["paired_effects"])["progress_diff"]).all()


def test_by_mechanism_turns_each_removal_twins_paired_effect_round(tmp_path):
    # a portal that helps (without it: progress lower), ice that costs (without it: higher)
    rows = []
    for m in range(4):
        for kind, with_p, without_p in (("no-portals", 0.8, 0.5), ("no-ice", 0.3, 0.6 + 0.05 * m)):
            source = f"{kind}-m{m}"
            rows.append(episode_row(maze_id=source, maze_checksum=f"c-{source}", progress_action=with_p))
            rows.append(episode_row(maze_id=f"{source}.{kind}", progress_action=without_p, variant=kind,
                                    variant_kind=kind, variant_family="ablation", twin_of=source,
                                    twin_of_checksum=f"c-{source}"))
    traces = load_runs([write_run(tmp_path / "run", rows, [])], resolve_mazes=False)
    effects = twins.paired_effects(traces)
    table = twins.by_mechanism(effects)
    assert table["mechanism"].tolist() == ["portal", "ice"] and table["mazes"].tolist() == [4, 4]
    portal, ice = table.to_dict("records")
    assert portal["with_progress"] == pytest.approx(0.8) and portal["without_progress"] == pytest.approx(0.5)
    assert portal["progress_effect"] == pytest.approx(0.3)
    assert portal["progress_effect_ci_note"] == "no variation between mazes"
    assert ice["progress_effect"] == pytest.approx(0.3 - (0.6 + 0.075)) and ice["progress_effect"] < 0
    diff = effects.set_index("kind").loc["no-ice"]
    assert (ice["progress_effect_ci_low"], ice["progress_effect_ci_high"]) == pytest.approx(
        (-diff["progress_diff_ci_high"], -diff["progress_diff_ci_low"]))
    assert ice["progress_effect_ci_low"] <= ice["progress_effect"] <= ice["progress_effect_ci_high"]
    assert twins.by_mechanism(effects[effects["kind"] == "rotate"]).empty
