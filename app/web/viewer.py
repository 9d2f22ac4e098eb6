"""``gridbench view``: a static viewer of a run that draws its frames in the browser.

The bundle is a handful of plain files, whatever the size of the run, that work from ``file://``
(no server, no network, no build step)::

    view/index.html           the page: the episode index and, in its place, one episode at a time
    view/static/              the page's scripts and style sheet
    view/data/episodes.js     the index: the listed columns of every episode, column by column
    view/data/mazes.js        the run's mazes (from the manifest), their start states, the oracle's paths
    view/data/tiles.js        the tiles frames are made of, one atlas per tile size the run used
    view/data/steps-NN.js     every episode's steps, in at most ``MAX_STEP_FILES`` files

No frame is drawn here. The page draws each frame on a canvas from the maze and the state the
step recorded, tile by tile, with the tiles ``env.tiles`` draws for ``render_state``, so it shows
the very pixels the model was shown. Data files are scripts that hand their JSON text to the page
(``gridbench.put``): a ``file://`` page may not ``fetch()`` files, but it may add script elements.
A steps file is loaded when one of its episodes is opened, and only that episode is parsed. Model
output is JSON text inside a script's string literal, and the page only ever shows it with
``textContent``.

Traces are read with pyarrow datasets (any number of Parquet files per folder, any number of
episodes per file); the steps are streamed in record batches and spooled by steps file, so memory
follows the size of one steps file, not of the run.
"""

from __future__ import annotations

import base64
import html
import json
import math
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, TextIO, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from agents.model import is_builtin
from agents.prompt import event_summary
from agents.protocol import Protocol
from agents.types import PastStep
from env import ACTIONS, BadInput, Maze, initial_state, maze_from_dict, mechanism_info, png_bytes, step
from env.discovery import STAGES
from env.files import atomic_write
from env.minigrid_env import cell_looks
from env.oracle import solve
from env.render import RenderSettings, frame
from env.tiles import AGENT_DIRS, tile_atlas
from traces import (
    EPISODES_DIR,
    MANIFEST,
    STEPS_DIR,
    StepRecord,
    episode_timelines,
    is_uri,
    open_store,
    read_manifest,
    read_table,
    recorded_state,
    trace_dataset,
)

FORMAT = "gridbench.view/1"
SWITCH_FRAMES: tuple[str, ...] = get_args(Protocol.model_fields["switch_frames"].annotation)
# the columns of the index table, in display order
INDEX_COLUMNS = (
    "model_name", "model", "condition", "maze_id", "repeat", "grid", "category", "termination",
    "solved", "steps", "optimal_actions", "progress_action", "closest_action", "invalid_outputs",
    "tokens_out", "cost_usd",
)
# also in the index, not shown: what drawing an episode needs before its steps file is loaded
DRAWING_COLUMNS = ("maze_checksum", "protocol")
# an opened episode's own facts, stored with its steps
DETAIL_COLUMNS = (
    "episode_id", "step_cap", "tokens_in", "tokens_reasoning", "d_start_action", "d_start_tile",
    "error_class", "error_message",
)
STEP_COLUMNS = (
    "step", "action", "parse", "reply", "reasoning", "event", "x", "y", "dir", "carrying",
    "action_distance", "tile_distance", "tokens_in", "tokens_out", "tokens_reasoning", "latency_s",
    "finish_reason", "retries", "reasks",
)
# the step columns a discovery timeline reads, besides the mechanisms
TIMELINE_COLUMNS = ("step", "action", "x", "y", "dir", "carrying")
# step columns with few distinct values: stored as codes into one list per bundle
CODED_STEP_COLUMNS = ("action", "parse", "event", "carrying", "finish_reason")
INDEX_ORDER = ("model_name", "condition", "maze_id", "repeat", "episode_id")
STATIC_FILES = ("viewer.css", "viewer.js", "episode.js", "frames.js")
MAX_STEP_FILES = 10
STEPS_PER_FILE = 100_000  # fewer steps make one file; more are spread over up to MAX_STEP_FILES
ROWS_AT_ONCE = 50_000  # steps turned into Python objects at a time while a steps file is written
DEFAULT_TILE_SIZE = 32
# the pages' one policy: nothing from the network, no inline script (a reply that became markup runs nothing)
CSP = "default-src 'none'; img-src 'self' data:; script-src 'self'; style-src 'self'"
SIGNIFICANT_DIGITS = 6  # of the floats a page shows (it prints three decimals)


@dataclass
class ViewSummary:
    out_dir: Path
    episodes: int
    steps: int = 0
    files: list[Path] = field(default_factory=list)
    without_frames: list[str] = field(default_factory=list)  # episodes whose maze is not in the manifest

    @property
    def bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files)


# ---- shared with human play --------------------------------------------------------------------
def script_json(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no reply can close the element."""
    return (json_text(obj).replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def template(name: str) -> Template:
    return Template(resources.files("app.web").joinpath("templates", name).read_text())


# ---- reading a run --------------------------------------------------------------------------------
def read_index(run_dir: str | Path) -> pa.Table:
    """The episodes of a run with the columns the bundle uses, in the index's order."""
    if not open_store(run_dir, "RUN_DIR").is_dir():
        raise BadInput(str(run_dir), "", "no such run folder")
    columns = list(dict.fromkeys(("run", *INDEX_COLUMNS, *DRAWING_COLUMNS, *DETAIL_COLUMNS)))
    table = read_table(run_dir, EPISODES_DIR, columns)
    if table.num_rows == 0:
        raise BadInput(str(run_dir), EPISODES_DIR, "the run holds no finished episodes")
    return table.sort_by([(c, "ascending") for c in INDEX_ORDER])


def _rounded(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """A column as Python values, floats to ``SIGNIFICANT_DIGITS`` and NaN as None (JSON has no NaN)."""
    values = column.to_pylist()
    if not pa.types.is_floating(column.type):
        return values
    return [None if v is None or v != v else float(f"{v:.{SIGNIFICANT_DIGITS}g}") for v in values]


def _columnar(column: pa.ChunkedArray) -> Any:
    """One index column as JSON: numbers as a list, strings and flags as codes into their values."""
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        return _rounded(column)
    coded = column.combine_chunks().dictionary_encode()
    return {"values": coded.dictionary.to_pylist(), "codes": coded.indices.to_pylist()}


def run_mazes(run_dir: str | Path, checksums: list[str]) -> list[Maze | None]:
    """The maze of each checksum, from the run's manifest (which stores mazes by checksum);
    None where the manifest lacks it or holds a broken one."""
    stored = (read_manifest(run_dir) or {}).get("mazes") or {}
    mazes: list[Maze | None] = []
    for checksum in checksums:
        try:
            mazes.append(maze_from_dict(stored[checksum], f"{run_dir}/{MANIFEST}") if checksum in stored else None)
        except BadInput:
            mazes.append(None)
    return mazes


def optimal_path(maze: Maze) -> list[list[int]]:
    """The cells a shortest plan from the start walks through (empty when the oracle finds none)."""
    solution = solve(maze)
    if solution.status != "solved":
        return []
    s = initial_state(maze)
    cells = [list(s.pos)]
    for a in solution.plan:
        s, _ = step(maze, s, a)
        if list(s.pos) != cells[-1]:
            cells.append(list(s.pos))
    return cells


def start_state(maze: Maze) -> dict[str, Any]:
    """The start as the page draws states: what ``mechanism_info`` says of it."""
    return mechanism_info(maze, initial_state(maze))


# ---- one episode's steps ----------------------------------------------------------------------------
def summaries(maze: Maze, steps: dict[str, list[Any]], mechanisms: list[dict[str, Any]],
              mechanism_of_step: list[int]) -> tuple[list[str], list[int]]:
    """The activity summaries the model was shown, and for each step the one it saw.

    The summary of step ``i`` is built from the steps before it. A step that changed neither the
    carried key nor a mechanism adds nothing to it, so it is rebuilt only after a step that did,
    from the recorded states before and after each such step.
    """

    def state(i: int):
        return recorded_state(maze, steps["x"][i], steps["y"][i], steps["dir"][i], steps["carrying"][i],
                              mechanisms[mechanism_of_step[i]])

    start = start_state(maze)
    changes: list[PastStep] = []
    texts, shown = [event_summary(maze, changes)], []
    for i, code in enumerate(mechanism_of_step):
        shown.append(len(texts) - 1)
        carrying = steps["carrying"][i]
        if i == 0:
            changed = carrying != start["carrying"] or any(mechanisms[code][k] != start[k] for k in mechanisms[code])
        else:
            changed = code != mechanism_of_step[i - 1] or carrying != steps["carrying"][i - 1]
        if changed:
            action = steps["action"][i]
            changes.append(PastStep(steps["step"][i], ACTIONS.index(action) if action in ACTIONS else None,
                                    steps["event"][i], state(i - 1) if i else initial_state(maze), state(i)))
            texts.append(event_summary(maze, changes))
    return texts, shown


def _summarised(protocol: dict[str, Any]) -> bool:
    """The episode's turns carried an activity summary (runs before `context` had `activity_summary`)."""
    if "context" in protocol:
        return protocol["context"] in ("summary", "summary+recent")
    return protocol.get("activity_summary", True) is not False


def _same_or_list(values: list[Any]) -> Any:
    """A column of one episode: its one value when every step has it (the page spreads it out)."""
    return values[0] if values and values.count(values[0]) == len(values) else values


class StepCodes:
    """The values of the coded step columns, numbered in the order they are met, for the whole bundle."""

    def __init__(self) -> None:
        self.codes: dict[str, dict[Any, int]] = {c: {} for c in CODED_STEP_COLUMNS}

    def encode(self, column: str, values: list[Any]) -> list[int]:
        codes = self.codes[column]
        return [codes.setdefault(v, len(codes)) for v in values]

    def values(self) -> dict[str, list[Any]]:
        return {c: list(codes) for c, codes in self.codes.items()}


def discovery(maze: Maze, steps: dict[str, list[Any]], mechanisms_text: list[str]) -> list[dict[str, Any]]:
    """Each key, door, switch and gate of the episode with the step of each discovery stage it
    reached (``traces.episode_timelines``, ``env.discovery``), for the step chart's marks."""
    rows = [{**{c: steps[c][i] for c in TIMELINE_COLUMNS}, "mechanisms": text} for i, text in enumerate(mechanisms_text)]
    return [{"object": t.object_id, "kind": t.kind, **{stage: getattr(t, stage) for stage in STAGES}}
            for t in episode_timelines(maze, rows)]


def episode_view(detail: dict[str, Any], steps: dict[str, list[Any]], mechanisms_text: list[str],
                   maze: Maze | None, with_summary: bool, codes: StepCodes,
                   view3d: tuple[RenderSettings, str] | None = None) -> dict[str, Any]:
    """What an opened episode shows, apart from its index row: facts, steps, states, summaries,
    and for an episode the model saw in 3D, the 3D frame of every state (``view3d``: its render
    block and switch frames), which tiles cannot draw in the page."""
    seen: dict[str, int] = {}
    mechanism_of_step = [seen.setdefault(t, len(seen)) for t in mechanisms_text]
    record: dict[str, Any] = {"episode": detail, "n": len(mechanisms_text), "steps": None, "mechanisms": None,
                              "mechanism_of_step": None, "summaries": None, "summary_of_step": None,
                              "discovery": [], "problem": None}
    try:
        mechanisms = [json.loads(t) for t in seen]
        if maze is not None and with_summary:
            record["summaries"], shown = summaries(maze, steps, mechanisms, mechanism_of_step)
            record["summary_of_step"] = _same_or_list(shown)
        if maze is not None:
            record["discovery"] = discovery(maze, steps, mechanisms_text)
        if maze is not None and view3d is not None:
            record["frames3d"], record["frames3d_missing"] = frames_3d(maze, steps, mechanisms, mechanism_of_step, view3d)
    except (KeyError, ValueError, TypeError, IndexError) as err:
        mechanisms = []
        record["problem"] = (f"the recorded states do not fit maze {maze.id if maze else '?'} "
                             f"({type(err).__name__}: {err}); no frames or summaries are shown")
    record["mechanisms"] = mechanisms
    record["mechanism_of_step"] = _same_or_list(mechanism_of_step)
    record["steps"] = {c: _same_or_list(codes.encode(c, v) if c in CODED_STEP_COLUMNS else v)
                       for c, v in steps.items()}
    return record


def frames_3d(maze: Maze, steps: dict[str, list[Any]], mechanisms: list[dict[str, Any]], mechanism_of_step: list[int],
              view3d: tuple[RenderSettings, str]) -> tuple[list[str] | None, str | None]:
    """The 3D frame of the start and of the state after each step, as PNG data URIs; or None and
    why, where this machine cannot draw them (no MuJoCo or Mesa)."""
    render, switch_frames = view3d
    states = [initial_state(maze)] + [
        recorded_state(maze, steps["x"][k], steps["y"][k], steps["dir"][k], steps["carrying"][k],
                       mechanisms[mechanism_of_step[k]]) for k in range(len(mechanism_of_step))]
    try:
        return ["data:image/png;base64," + base64.b64encode(png_bytes(frame(maze, s, 32, switch_frames, render))).decode("ascii")
                for s in states], None
    except (BadInput, RuntimeError) as err:
        return None, str(err)


def _view3d(protocol: dict[str, Any]) -> tuple[RenderSettings, str] | None:
    """An episode's 3D view from its recorded protocol; None for 2D frames."""
    block = protocol.get("render")
    if not isinstance(block, dict) or block.get("backend") != "mujoco3d":
        return None
    try:
        return RenderSettings(**block), str(protocol.get("switch_frames", "distinct"))
    except ValueError:
        return None


# ---- data files ---------------------------------------------------------------------------------------
def js_string(text: str) -> str:
    """A JavaScript string literal holding ``text``: whatever the text, it stays one string."""
    return json.dumps(text, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def json_text(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def write_data(path: Path, name: str, payload: str) -> Path:
    """A data file: a script that hands ``payload`` (JavaScript: a string, or an array of strings) to the page."""
    atomic_write(path, f"gridbench.put({js_string(name)},{payload});\n")
    return path


def step_file_name(k: int) -> str:
    return f"steps-{k:02d}"


def step_file_starts(steps_per_episode: np.ndarray) -> list[int]:
    """The first episode (index position) of each steps file: files of about equal step counts."""
    total = int(steps_per_episode.sum())
    files = max(1, min(MAX_STEP_FILES, math.ceil(total / STEPS_PER_FILE)))
    before = np.concatenate([[0], np.cumsum(steps_per_episode)[:-1]])
    starts = np.searchsorted(before, [total * k / files for k in range(files)], side="left")
    return sorted({0, *(int(s) for s in starts if s < len(steps_per_episode))})


SPOOL_SCHEMA = pa.schema([("ordinal", pa.int32()), *(StepRecord.schema().field(c) for c in (*STEP_COLUMNS, "mechanisms"))])


def spool_steps(run_dir: str | Path, ids: pa.Array, starts: list[int], spool: Path,
                advance: Callable[[int], None]) -> list[Path]:
    """Stream the run's steps once and sort them by steps file into Arrow files under ``spool``.

    A step belongs to the episode its ``episode_id`` names; steps of episodes the index does not
    hold (a run killed between its two files) are left out. Returns one path per steps file
    (absent when no step went there).
    """
    paths = [spool / f"{k}.arrow" for k in range(len(starts))]
    steps = trace_dataset(run_dir, STEPS_DIR)
    writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
    bounds = np.asarray(starts)
    try:
        # no footers kept (cache_metadata, as traces.read_table): a run of one file per episode
        # would otherwise hold ~100 kB per file until the last batch
        for batch in steps.to_batches(columns=["episode_id", *STEP_COLUMNS, "mechanisms"], batch_size=32_768,
                                      batch_readahead=2, fragment_readahead=1, cache_metadata=False):
            ordinal = pc.index_in(batch.column("episode_id"), value_set=ids).cast(pa.int32())
            rows = pa.RecordBatch.from_arrays([ordinal, *batch.columns[1:]], schema=SPOOL_SCHEMA)
            rows = rows.filter(pc.is_valid(ordinal))
            file_of = np.searchsorted(bounds, rows.column(0).to_numpy(), side="right") - 1
            for k in np.unique(file_of):
                if k not in writers:
                    writers[k] = pa.ipc.new_file(paths[k], SPOOL_SCHEMA)
                writers[k].write_batch(rows.filter(pa.array(file_of == k)))
            advance(batch.num_rows)
    finally:
        for w in writers.values():
            w.close()
    return paths


def _episode_groups(row_starts: np.ndarray) -> Iterator[tuple[int, int]]:
    """Runs ``[g0, g1)`` of consecutive episodes with about ``ROWS_AT_ONCE`` steps together;
    ``row_starts[i]`` is the first row of episode ``i``, the last entry the end of the rows."""
    episodes, g0 = len(row_starts) - 1, 0
    while g0 < episodes:
        g1 = int(np.searchsorted(row_starts, row_starts[g0] + ROWS_AT_ONCE, side="right")) - 1
        g1 = min(max(g1, g0 + 1), episodes)
        yield g0, g1
        g0 = g1


@dataclass
class BundleSource:
    """What writing a steps file needs to know of the run, besides its steps."""

    details: dict[str, list[Any]]  # DETAIL_COLUMNS by index position
    mazes: list[Maze | None]  # by index position
    with_summary: list[bool]  # by index position: the protocol showed an activity summary
    codes: StepCodes = field(default_factory=StepCodes)
    # by index position: the 3D view (render block and switch frames) of an episode shown 3D frames
    views3d: list[tuple[RenderSettings, str] | None] = field(default_factory=list)


def write_step_file(path: Path, name: str, spooled: Path, first: int, end: int, source: BundleSource,
                    advance: Callable[[int], None]) -> None:
    """The steps file of episodes ``first`` to ``end - 1``: one JSON string per episode, in index order."""
    if spooled.exists():
        with pa.memory_map(str(spooled)) as source_file:
            table = pa.ipc.open_file(source_file).read_all()
    else:
        table = SPOOL_SCHEMA.empty_table()
    table = table.sort_by([("ordinal", "ascending"), ("step", "ascending")])
    row_starts = np.searchsorted(table.column("ordinal").to_numpy(), np.arange(first, end + 1))

    def write(f: TextIO) -> None:
        f.write(f"gridbench.put({js_string(name)},[")
        for g0, g1 in _episode_groups(row_starts):
            r0 = int(row_starts[g0])
            part = table.slice(r0, int(row_starts[g1]) - r0)
            lists = {c: _rounded(part.column(c)) for c in (*STEP_COLUMNS, "mechanisms")}
            for i in range(g0, g1):
                a, b = int(row_starts[i]) - r0, int(row_starts[i + 1]) - r0
                o = first + i
                record = episode_view(
                    {c: source.details[c][o] for c in DETAIL_COLUMNS},
                    {c: lists[c][a:b] for c in STEP_COLUMNS}, lists["mechanisms"][a:b],
                    source.mazes[o], source.with_summary[o], source.codes,
                    source.views3d[o] if source.views3d else None)
                f.write(("," if i else "") + js_string(json_text(record)))
            advance(g1 - g0)
        f.write("]);\n")

    atomic_write(path, write, text=True)


def tile_sheets(tile_sizes: list[int]) -> dict[str, Any]:
    """The tile atlas of each tile size, as the page loads it: a PNG and the row of each tile."""
    sheets = {}
    for size in tile_sizes:
        atlas, rows = tile_atlas(size)
        png = base64.b64encode(png_bytes(atlas, compress_level=9)).decode("ascii")
        sheets[str(size)] = {"size": size, "png": f"data:image/png;base64,{png}", "rows": rows,
                             "columns": list(AGENT_DIRS)}
    return sheets


def _protocol(text: str | None) -> dict[str, Any]:
    try:
        p = json.loads(text or "{}")
    except ValueError:
        return {}
    return p if isinstance(p, dict) else {}


def copy_static(out_dir: Path) -> list[Path]:
    """The page's own scripts and style sheet."""
    static = out_dir / "static"
    static.mkdir(parents=True, exist_ok=True)
    written = []
    for name in STATIC_FILES:
        data = resources.files("app.web").joinpath("static", name).read_text(encoding="utf-8")
        atomic_write(static / name, data)
        written.append(static / name)
    return written


# ---- the bundle ------------------------------------------------------------------------------------------
def build_view(run_dir: str | Path, out_dir: str | Path | None = None, progress: bool = True) -> ViewSummary:
    """Write the viewer of ``run_dir`` into ``out_dir`` (default ``run_dir/view``)."""
    index = read_index(run_dir)  # bad input fails here, before anything is written
    if out_dir is None and is_uri(run_dir):
        raise BadInput(str(run_dir), "--out", "a run in object storage needs a local folder to write the viewer to")
    out_dir = Path(out_dir) if out_dir is not None else Path(run_dir) / "view"
    n = index.num_rows
    runs = [r for r in index.column("run").unique().to_pylist() if r]
    run_name = runs[0] if runs else Path(str(run_dir)).name
    # strings repeat across 150k episodes: each distinct one is handled once, by its code
    columns_json = {c: _columnar(index.column(c)) for c in (*INDEX_COLUMNS, *DRAWING_COLUMNS)}
    protocols = columns_json["protocol"]
    protocols["values"] = [_protocol(t) for t in protocols["values"]]
    checksums = columns_json["maze_checksum"]
    maze_of_code = run_mazes(run_dir, checksums["values"])
    source = BundleSource(
        details={c: _rounded(index.column(c)) for c in DETAIL_COLUMNS},
        mazes=[None if k is None else maze_of_code[k] for k in checksums["codes"]],
        with_summary=[k is None or _summarised(protocols["values"][k]) for k in protocols["codes"]],
        views3d=[None if k is None else _view3d(protocols["values"][k]) for k in protocols["codes"]])
    steps_per_episode = index.column("steps").fill_null(0).to_numpy()
    starts = step_file_starts(steps_per_episode)
    summary = ViewSummary(out_dir, n, int(steps_per_episode.sum()))
    summary.without_frames = [e for e, m, k in zip(source.details["episode_id"], source.mazes, steps_per_episode,
                                                   strict=True) if m is None and k]
    data = out_dir / "data"
    data.mkdir(parents=True, exist_ok=True)

    columns = [TextColumn("view {task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with Progress(*columns, disable=not progress, transient=True) as bar, \
            tempfile.TemporaryDirectory(prefix=".spool-", dir=out_dir) as spool:
        reading = bar.add_task("steps read", total=summary.steps)
        writing = bar.add_task("episodes written", total=n)
        spooled = spool_steps(run_dir, index.column("episode_id").combine_chunks(), starts, Path(spool),
                              lambda k: bar.advance(reading, k))
        bar.update(reading, completed=summary.steps)
        for k, first in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else n
            path = data / f"{step_file_name(k)}.js"
            write_step_file(path, step_file_name(k), spooled[k], first, end, source,
                            lambda k: bar.advance(writing, k))
            summary.files.append(path)
    for stale in data.glob("steps-*.js"):
        if stale not in summary.files:
            stale.unlink()

    # how each object is drawn from a recorded state, under either switch_frames: the page knows no
    # ruleset (env.minigrid_env.cell_looks)
    mazes = {m.checksum: {"maze": m.to_dict(), "start": start_state(m), "path": optimal_path(m),
                          "looks": {frames: cell_looks(m, frames) for frames in SWITCH_FRAMES}}
             for m in maze_of_code if m is not None}
    tile_sizes = sorted({int(p.get("tile_size") or DEFAULT_TILE_SIZE) for p in protocols["values"]} or
                        {DEFAULT_TILE_SIZE})
    summary.files.append(write_data(data / "mazes.js", "mazes", js_string(json_text(mazes))))
    summary.files.append(write_data(data / "tiles.js", "tiles", js_string(json_text(tile_sheets(tile_sizes)))))
    summary.files.extend(copy_static(out_dir))
    # the arms played by built-in agents: the page's headline counts them apart from the models, as
    # the report does (docs/report.md)
    references = sorted({name for name, model in zip(index.column("model_name").to_pylist(),
                                                     index.column("model").to_pylist(), strict=True)
                         if name is not None and is_builtin(model or "")})
    payload = {"format": FORMAT, "run": run_name, "episodes": n, "shown": list(INDEX_COLUMNS),
               "references": references, "columns": columns_json, "step_files": starts, "step_values": source.codes.values(),
               "default_tile_size": DEFAULT_TILE_SIZE}
    summary.files.append(write_data(data / "episodes.js", "episodes", js_string(json_text(payload))))
    # the page last: a bundle with an index.html is complete
    page = template("index.html").substitute(title=html.escape(f"gridbench · {run_name}"), csp=CSP)
    atomic_write(out_dir / "index.html", page)
    summary.files.append(out_dir / "index.html")
    return summary


def older_layout(out_dir: Path) -> list[Path]:
    """What an older viewer (a page per episode, a PNG per state) left in ``out_dir``: unused now."""
    return [p for p in (out_dir / "episodes", out_dir / "frames") if p.is_dir()]
