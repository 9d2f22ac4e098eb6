"""A sweep's ``variants:``: each maze with its twins, the originals' episode ids unchanged, the twins
cached, the ones left out said, bad entries one line; the shipped ``attribution`` sweep."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from env.errors import BadInput
from env.variants import record_of
from orchestrator.sweep import SWEEPS_DIR, load_sweep, parse_sweep

# a switch-gate maze (no distractors) and a key-door maze (no switches): each has a twin left out
TWO = ["study/r1_B1_8x8_corridor_swg_0", "study/r1_M1_8x8_corridor_kr_0"]
KINDS = ["no-switches", "reskin", "mirror-tb"]


@pytest.fixture(autouse=True)
def variant_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "gridbench" / "variants"


def _main_with(**fields) -> dict:
    data = yaml.safe_load((SWEEPS_DIR / "main.yaml").read_text())
    return {**data, "mazes": TWO, **fields}


def test_each_maze_runs_with_its_twins_and_the_originals_keep_their_episode_ids():
    plain = parse_sweep(_main_with(), "main.yaml")
    twins = parse_sweep(_main_with(variants=KINDS), "main.yaml")
    assert [m.id for m in twins.mazes] == [
        "r1_B1_8x8_corridor_swg_0", "r1_B1_8x8_corridor_swg_0.no-switches", "r1_B1_8x8_corridor_swg_0.reskin-neutral",
        "r1_B1_8x8_corridor_swg_0.mirror-tb",
        "r1_M1_8x8_corridor_kr_0", "r1_M1_8x8_corridor_kr_0.reskin-neutral", "r1_M1_8x8_corridor_kr_0.mirror-tb"]
    originals = [e for e in twins.episodes() if record_of(e.maze) is None]
    assert [e.episode_id for e in originals] == [e.episode_id for e in plain.episodes()]
    # every twin runs under the same models, protocol and repeats as its source
    assert len(twins.episodes()) == 7 * 3
    assert {(e.model.name, e.condition.protocol.hash) for e in twins.episodes()} == {
        (e.model.name, e.condition.protocol.hash) for e in plain.episodes()}
    # the one left out is said, and the manifest's sweep records it
    assert [v.line() for v in twins.left_out] == [
        "variant r1_M1_8x8_corridor_kr_0.no-switches left out: it has no switches"]
    recorded = twins.resolved()["variants"]
    assert recorded["kinds"] == KINDS and recorded["left_out"][0]["source"] == "r1_M1_8x8_corridor_kr_0"
    assert "variants" not in plain.resolved()  # a sweep without variants records what it did before


def test_twins_are_cached_and_read_back_not_rebuilt(variant_cache, monkeypatch):
    seen: list[tuple[int, int]] = []
    first = parse_sweep(_main_with(variants=KINDS), "main.yaml")
    assert not variant_cache.exists()  # loading a sweep builds nothing: its twins are built when needed
    first.build_twins(lambda done, total: seen.append((done, total)))
    assert seen[-1] == (6, 6) and len(list(variant_cache.glob("*.json"))) == 6

    def refuse(*args, **kwargs):
        raise AssertionError("a cached twin was built again")

    monkeypatch.setattr("orchestrator.sweep_variants.build_variants", refuse)
    again = parse_sweep(_main_with(variants=KINDS), "main.yaml")
    assert [m.checksum for m in again.mazes] == [m.checksum for m in first.mazes]
    assert again.left_out == first.left_out
    # an unreadable cache file is rebuilt, not trusted
    broken = sorted(variant_cache.glob("*.json"))[0]
    broken.write_text("{not json")
    with pytest.raises(AssertionError, match="built again"):
        parse_sweep(_main_with(variants=KINDS), "main.yaml").build_twins()


@pytest.mark.parametrize("value,message", [
    ("mirror-tb", "variants: must be a non-empty list"),
    ([], "variants: must be a non-empty list"),
    (["mirror-tb", "flip"], "variants[1]: not a kind of variant"),
    (["mirror-tb,reskin"], "variants[0]: must be one variant kind"),
    ([3], "variants[0]: must be one variant kind"),
])
def test_bad_variants_are_one_line_naming_the_file_and_field(tmp_path, value, message):
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(_main_with(variants=value)))
    with pytest.raises(BadInput) as err:
        load_sweep(path)
    assert "\n" not in str(err.value) and str(err.value).startswith(str(path)) and message in str(err.value)


def test_cli_bad_variants_exit_2_and_dry_run_lists_twins_and_those_left_out(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_main_with(variants=["mirror-sideways"])))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(bad), "--dry-run"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "variants[0]" in r.stderr
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(_main_with(variants=KINDS, models=[{"name": "oracle", "model": "builtin/oracle"}])))
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(good), "--dry-run", "--json",
                        "--out", str(tmp_path / "res")], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "variant r1_M1_8x8_corridor_kr_0.no-switches left out: it has no switches\n" in r.stderr
    plan = json.loads(r.stdout)
    assert plan["episodes"] == 7 and plan["variants"]["kinds"]["no-switches"] == {
        "mazes": 1, "left_out": 1, "episodes": 1}
    assert plan["variants"]["kinds"]["original"]["episodes"] == 2
def test_the_attribution_sweep_is_mains_protocol_and_models_with_the_four_modes_twins():
    main = yaml.safe_load((SWEEPS_DIR / "main.yaml").read_text())
    attribution = yaml.safe_load((SWEEPS_DIR / "attribution.yaml").read_text())
    assert attribution["variants"] == ["no-switches", "reskin", "no-distractors", "control-none", "mirror-tb"]
    for key in ("mazes", "repeats", "protocol", "models"):
        assert attribution[key] == main[key], key
    # on the same mazes its originals are main's own episodes
    plain = load_sweep("main", mazes=TWO[0])
    twins = load_sweep("attribution", mazes=TWO[0])
    assert {e.episode_id for e in plain.episodes()} < {e.episode_id for e in twins.episodes()}


def test_twins_of_gridbench_s_own_mazes_run_under_their_ruleset_too():
    sweep = parse_sweep({"name": "own", "mazes": "example", "variants": ["mirror-lr", "rotate-90", "no-switches"],
                         "repeats": 1, "protocol": {"preset": "gridbench-final"},
                         "models": [{"name": "oracle", "model": "builtin/oracle"}]}, "own.yaml")
    source, *twins = sweep.mazes
    assert source.ruleset == "minigrid" and [record_of(t)["name"] for t in twins] == ["mirror-lr", "rotate-90",
                                                                                     "no-switches"]
    assert all(t.ruleset == "minigrid" for t in twins) and not sweep.left_out
    # under gridbench's own rules a mirror and a rotation are exact: the oracle's count is the source's
    from env.oracle import solve

    counts = {record_of(t)["name"]: len(solve(t).plan) for t in twins}
    assert counts["mirror-lr"] == counts["rotate-90"] == len(solve(source).plan) != counts["no-switches"]


def test_the_discovery_sweep_shows_its_sets_balance_and_runs_each_maze_beside_its_removal_twin(tmp_path):
    from env.generator.maze_pool import DISCOVERY_BANDS, DISCOVERY_KINDS

    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "discovery", "--dry-run", "--json",
                        "--out", str(tmp_path / "res")], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["balance"] == {k: dict.fromkeys(DISCOVERY_BANDS, 2) for k in DISCOVERY_KINDS}
    twins = {k: v for k, v in plan["variants"]["kinds"].items() if k != "original"}
    # every maze has exactly one mechanism, so exactly one of the seven removals: 6 per kind
    assert {k: v["mazes"] for k, v in twins.items()} == dict.fromkeys(
        ("no-switches", "no-portals", "no-deaths", "no-ice", "no-turntables", "no-oneways", "no-reversers"), 6)
    assert plan["episodes"] == 3 * (42 + 42)
    # the 252 removals a maze cannot have are said once per kind and reason, each counted
    notes = [line for line in r.stderr.splitlines() if "left out" in line]
    assert notes == [f"note: 36 {k} twins left out: it has no {k.removeprefix('no-')} "
                     f"({', '.join(ids[:3])} and 33 more)"
                     for k, ids in _missing_removals(plan).items()]
    assert sum(1 for v in plan["variants"]["left_out"]) == 252  # --json still lists every one


def _missing_removals(plan: dict) -> dict[str, list[str]]:
    """Per removal kind, in the order first met, the source mazes whose twin of that kind was left out."""
    out: dict[str, list[str]] = {}
    for v in plan["variants"]["left_out"]:
        out.setdefault(v["name"], []).append(v["source"])
    return out
