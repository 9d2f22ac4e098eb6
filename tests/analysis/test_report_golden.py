"""The report of each deterministic test run equals its golden copy (``golden.py``): every CSV
table and metrics.json, integers and text exactly, floats to a relative 1e-9."""

from __future__ import annotations

import json

import pytest
from golden import CASES, build, csv_differences, differences, json_differences, read_golden


@pytest.mark.parametrize("case", list(CASES))
def test_report_equals_its_golden_copy(case, tmp_path):
    want = read_golden(case)
    assert "metrics.json" in want and len(want) > 20
    got = build(case, tmp_path)
    problems = differences(want, got)
    assert not problems, f"{len(problems)} differences, the first: " + "\n".join(problems[:20])


def test_the_comparison_notices_a_changed_cell():
    want = read_golden("hand")
    csv = want["verbs.csv"]
    header, first, *rest = csv.splitlines()
    cells = first.split(",")
    i = header.split(",").index("pickup_actions")
    cells[i] = str(int(cells[i]) + 1)
    assert csv_differences(csv, "\n".join([header, ",".join(cells), *rest]) + "\n", "verbs.csv")
    metrics = json.loads(want["metrics.json"])
    changed = json.loads(want["metrics.json"])
    changed["headline"]["mean_progress_action"] *= 1 + 1e-6
    assert json_differences(metrics, changed) and not json_differences(metrics, json.loads(want["metrics.json"]))
    changed = json.loads(want["metrics.json"])
    changed["headline"]["mean_progress_action"] *= 1 + 1e-13  # summation order: within the tolerance
    assert not json_differences(metrics, changed)
