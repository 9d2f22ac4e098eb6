"""Sealed sets (docs/sealed.md): a private folder and a public commitment that reproduces by the
documented construction; a tampered set refused in one line naming the file; unsealing and a
third party's check; a sweep on a sealed set carries its seal into the run's manifest."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from env.errors import BadInput
from env.generator.maze_pool import manifest_text
from env.generator.sealed import check_set, commitment
from orchestrator.sweep import parse_sweep
from traces import read_manifest, write_manifest

OTHER_MAZE = Path(__file__).resolve().parents[2] / "env" / "mazes" / "pool" / "p0005.json"


def _gridbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True)


def _copy(folder: Path, to: Path) -> Path:
    """A writable copy of a sealed folder (the original is its owner's, read-write, and shared)."""
    shutil.copytree(folder, to)
    return to


def test_a_sealed_set_is_private_and_its_commitment_reproduces_by_the_documented_construction(sealed_set):
    folder, public, printed = sealed_set
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["commitment.json", "manifest.json", "p0001.json", "p0002.json", "p0003.json", "seal.json"]
    assert {stat.S_IMODE((folder / f).stat().st_mode) for f in files} == {0o600}

    seal = json.loads((folder / "seal.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    checksums = [e["checksum"] for e in manifest["mazes"]]
    # docs/sealed.md, "The commitment", written out again by hand
    preimage = json.dumps({"format": "gridbench.sealed/1", "set": "blind3", "generator_version": 1, "recipe": "pool",
                           "ruleset": "minigrid", "count": 3, "seed": seal["seed"], "mazes": checksums},
                          sort_keys=True, separators=(",", ":")).encode()
    expected = hashlib.sha256(preimage).hexdigest()
    published = json.loads(public.read_text())
    assert published == {"format": "gridbench.commitment/1", "set": "blind3", "generator_version": 1,
                         "recipe": "pool", "ruleset": "minigrid", "count": 3, "commitment": expected}
    assert manifest["sealed"] == {"commitment": expected, "set": "blind3"} and seal["commitment"] == expected
    assert len(seal["seed"]) > 60  # 256 random bits, in decimal
    # the secret never leaves the folder: not printed, not in the public file, not in the manifest
    assert seal["seed"] not in printed and expected in printed
    assert seal["seed"] not in public.read_text() and seal["seed"] not in (folder / "manifest.json").read_text()
    assert not any(c in public.read_text() for c in checksums)
    # salted: without the seed the checksums alone do not give the commitment
    assert commitment(published, 0, checksums) != expected


def test_unsealing_round_trips_and_a_third_party_checks_it_against_the_saved_commitment(sealed_set, tmp_path):
    folder, public, _ = sealed_set
    saved = Path(shutil.copy(public, tmp_path / "saved.json"))
    done = _gridbench("pool", "unseal", str(folder), "--out", str(tmp_path / "open"), "--commitment", str(saved),
                      "--workers", "1")
    assert done.returncode == 0, done.stderr
    opened = tmp_path / "open"
    for maze in ("p0001.json", "p0002.json", "p0003.json"):
        assert (opened / maze).read_bytes() == (folder / maze).read_bytes()
    manifest = json.loads((opened / "manifest.json").read_text())
    seed = json.loads((folder / "seal.json").read_text())["seed"]
    assert "sealed" not in manifest and manifest["unsealed"]["seed"] == seed
    assert manifest["provenance"]["command"] == f"gridbench pool build --count 3 --seed {seed}"
    assert stat.S_IMODE(opened.stat().st_mode) != 0o700  # a public folder now
    done = _gridbench("pool", "verify-commitment", str(opened), "--commitment", str(saved), "--workers", "1")
    assert done.returncode == 0 and "reproduce commitment" in done.stdout, done.stderr
    # a run on the revealed set is not a sealed run
    assert parse_sweep({"name": "t", "mazes": str(opened), "models": ["builtin/oracle"]}).sealed is None


def _swap_maze(folder: Path) -> str:
    shutil.copy(OTHER_MAZE, folder / "p0002.json")
    return "p0002.json: checksum:"


def _swap_maze_and_its_entry(folder: Path) -> str:
    shutil.copy(OTHER_MAZE, folder / "p0002.json")
    manifest = json.loads((folder / "manifest.json").read_text())
    other = json.loads(OTHER_MAZE.read_text())
    manifest["mazes"][1] = {**manifest["mazes"][1], "checksum": _checksum(other)}
    (folder / "manifest.json").write_text(manifest_text(manifest))
    return "seal.json: commitment:"


def _checksum(maze: dict) -> str:
    from env.maze import maze_from_dict

    return maze_from_dict(maze, "test").checksum


def _change_seed(folder: Path) -> str:
    seal = json.loads((folder / "seal.json").read_text())
    (folder / "seal.json").write_text(json.dumps({**seal, "seed": str(int(seal["seed"]) + 1)}))
    return "seal.json: commitment:"


def _change_seed_and_recommit(folder: Path) -> str:
    """A consistent forgery: another seed with the commitment recomputed, which no saved commitment
    matches and which does not regenerate the mazes."""
    seal = json.loads((folder / "seal.json").read_text())
    seed = int(seal["seed"]) + 1
    manifest = json.loads((folder / "manifest.json").read_text())
    forged = commitment(seal, seed, [e["checksum"] for e in manifest["mazes"]])
    for name in ("seal.json", "commitment.json"):
        record = json.loads((folder / name).read_text())
        (folder / name).write_text(json.dumps({**record, "commitment": forged,
                                               **({"seed": str(seed)} if name == "seal.json" else {})}))
    return "saved.json: commitment:"


def _remove_a_maze(folder: Path) -> str:
    (folder / "p0003.json").unlink()
    return "p0003.json: missing"


@pytest.mark.parametrize("tamper", [_swap_maze, _swap_maze_and_its_entry, _change_seed, _change_seed_and_recommit,
                                    _remove_a_maze])
def test_a_tampered_set_is_refused_naming_the_file(sealed_set, tmp_path, tamper):
    folder, public, _ = sealed_set
    copy = _copy(folder, tmp_path / "blind3")
    saved = Path(shutil.copy(public, tmp_path / "saved.json"))
    names = tamper(copy)
    with pytest.raises(BadInput) as refused:
        check_set(copy, saved, workers=1)
    assert names in str(refused.value)


def test_a_forged_seed_that_no_saved_commitment_holds_still_fails_to_regenerate(sealed_set, tmp_path):
    copy = _copy(sealed_set[0], tmp_path / "blind3")
    _change_seed_and_recommit(copy)
    with pytest.raises(BadInput, match=r"p0001\.json: differs byte for byte"):
        check_set(copy, workers=1)


def test_bad_input_is_one_line_exit_2_and_writes_nothing(sealed_set, tmp_path):
    folder, _, _ = sealed_set
    not_sealed = tmp_path / "plain"
    not_sealed.mkdir()
    (not_sealed / "manifest.json").write_text("{}")
    swapped = _copy(folder, tmp_path / "swapped")
    _swap_maze(swapped)
    out = tmp_path / "out"
    cases = [
        (("pool", "unseal", str(tmp_path / "nowhere"), "--out", str(out)), "nowhere: no such folder"),
        (("pool", "unseal", str(not_sealed), "--out", str(out)), "seal.json: missing"),
        (("pool", "unseal", str(swapped), "--out", str(out)), "p0002.json: checksum:"),
        (("pool", "unseal", str(folder), "--out", str(folder / "inside")), "--out:"),
        (("pool", "verify-commitment", str(folder), "--commitment", str(tmp_path / "none.json")), "none.json: missing"),
        (("pool", "build", "--sealed", "--seed", "4", "--out", str(out)), "--seed:"),
        (("pool", "build", "--sealed", "--name", "../up", "--out", str(out)), "--name:"),
        (("pool", "build", "--sealed", "--out", str(swapped)), "--out:"),  # an earlier sealed set is never replaced
    ]
    for args, says in cases:
        done = _gridbench(*args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
        assert says in done.stderr, (args, done.stderr)
    assert not out.exists() and not (folder / "inside").exists()


def test_a_sweep_on_a_sealed_set_carries_its_seal_and_a_resumed_run_keeps_it(sealed_set, tmp_path):
    folder, _, _ = sealed_set
    seal = json.loads((folder / "manifest.json").read_text())["sealed"]
    sweep = {"name": "t", "mazes": str(folder), "models": ["builtin/oracle"]}
    assert parse_sweep(sweep).sealed == seal
    # one maze of the set, or a model's own mazes from it, are the sealed set too
    assert parse_sweep({**sweep, "mazes": [str(folder / "p0001.json"), "example"]}).sealed == seal
    assert parse_sweep({**sweep, "mazes": "hand", "models": [{"model": "builtin/oracle", "mazes": str(folder)}]}
                       ).sealed == seal
    assert parse_sweep({**sweep, "mazes": "hand"}).sealed is None
    other = _copy(folder, tmp_path / "blind3b")
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(manifest_text({**manifest, "sealed": {**seal, "commitment": "0" * 64}}))
    with pytest.raises(BadInput, match="two sealed sets"):
        parse_sweep({**sweep, "mazes": [str(folder / "p0001.json"), str(other / "p0002.json")]})

    run = tmp_path / "run"
    write_manifest(run, run="run", sweep={"name": "t"}, mazes={}, invocation={"argv": ["1"]}, sealed=seal)
    write_manifest(run, run="run", sweep={"name": "t"}, mazes={}, invocation={"argv": ["1"]}, replace_last=True)
    write_manifest(run, run="run", sweep={"name": "t"}, mazes={}, invocation={"argv": ["2"]})
    assert read_manifest(run)["sealed"] == seal


def test_the_dry_run_of_a_sealed_sweep_names_its_commitment(sealed_set, tmp_path):
    folder, public, _ = sealed_set
    sweep = tmp_path / "blind.yaml"
    sweep.write_text(json.dumps({"name": "blind", "mazes": str(folder), "models": ["builtin/oracle"]}))
    done = _gridbench("run", str(sweep), "--dry-run", "--out", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    assert f"sealed set blind3: the manifest records commitment {json.loads(public.read_text())['commitment']}" \
        in " ".join(done.stdout.split())
