"""Random documents fed to the maze and sweep loaders: they load or raise ``BadInput``, never
anything else (a traceback at the command line is a bug, whatever the file holds)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sweep_runs import MAZES

from env import BadInput, load_maze, maze_from_dict
from orchestrator.sweep import load_sweep, parse_sweep

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCRATCH = Path(tempfile.mkdtemp(prefix="gridbench-fuzz-"))

scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True) | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
    st.text(max_size=10), inner, max_size=5), max_leaves=25)
VALID_MAZE = json.loads((MAZES / "keydoor-8.json").read_text())
VALID_SWEEP = {"name": "fuzz", "mazes": str(MAZES), "repeats": 1, "protocol": {"prompt": "standard"},
               "models": [{"name": "oracle", "model": "builtin/oracle", "max_concurrency": 2}],
               "conditions": [{"name": "baseline"}, {"name": "no-thinking", "thinking": False}]}
MAZE_FIELDS = ["format", "id", "grid", "start", "goal", "objects", "meta"]


def mutate(doc: dict, data) -> dict:
    """``doc`` with one field (at the top or one level down) replaced, dropped or added."""
    doc = json.loads(json.dumps(doc))
    target = doc
    inner = [k for k, v in doc.items() if isinstance(v, (dict, list)) and v]
    if inner and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(inner))
        target = doc[key] if isinstance(doc[key], dict) else doc[key][0]
        if not isinstance(target, dict):
            return doc
    choice = data.draw(st.sampled_from(["replace", "drop", "add"]))
    keys = list(target)
    if choice == "add" or not keys:
        target[data.draw(st.text(max_size=8))] = data.draw(json_values)
    elif choice == "drop":
        del target[data.draw(st.sampled_from(keys))]
    else:
        target[data.draw(st.sampled_from(keys))] = data.draw(json_values)
    return doc


def loads_or_bad_input(load, *args) -> None:
    try:
        load(*args)
    except BadInput as err:
        assert "\n" not in str(err)


@SETTINGS
@given(json_values)
def test_random_json_to_the_maze_loader(doc):
    loads_or_bad_input(maze_from_dict, doc, "fuzz.json")


@SETTINGS
@given(st.data())
def test_valid_maze_with_one_field_changed(data):
    loads_or_bad_input(maze_from_dict, mutate(VALID_MAZE, data), "fuzz.json")


@SETTINGS
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_random_bytes_in_a_maze_file(raw):
    path = SCRATCH / "fuzz.json"
    path.write_bytes(raw)
    loads_or_bad_input(load_maze, path)


@SETTINGS
@given(st.data())
def test_valid_sweep_with_one_field_changed(data):
    doc = mutate(VALID_SWEEP, data)
    path = SCRATCH / "fuzz.yaml"
    path.write_text(yaml.safe_dump(doc))
    loads_or_bad_input(load_sweep, path)


@SETTINGS
@given(json_values)
def test_random_yaml_documents_to_the_sweep_loader(doc):
    path = SCRATCH / "fuzz.yaml"
    path.write_text(yaml.safe_dump(doc))
    loads_or_bad_input(load_sweep, path)
    loads_or_bad_input(parse_sweep, doc, "fuzz.yaml")


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list("abc:-[]{}!&*|>'\"#%@` \n\t,?0123.")), max_size=120))
def test_random_yaml_text_to_the_sweep_loader(text):
    path = SCRATCH / "fuzz.yaml"
    path.write_text(text)
    loads_or_bad_input(load_sweep, path)
