"""Per-step derived columns that the failure, regret and compute analyses share, in DuckDB.

``annotate`` streams each run's steps table (a lazy Arrow dataset, only the columns in
``TRACE_COLUMNS``: never the reply or reasoning texts) once into a DuckDB database of its own,
a temporary file, and adds the derived columns with window functions per episode. Every per-step
analysis is then one SQL aggregation over that table (``StepTable.query``), and only its small
result reaches pandas: memory stays bounded however many steps the runs hold (DuckDB spills to
disk beyond ``MEMORY_LIMIT``).

Added to each step (steps ordered within an episode):

- ``d_before``: action distance before the step (the episode's ``d_start_action`` for step 1);
  ``delta = d_after - d_before``. An unreachable goal (null distance) counts as infinitely far
  (``d_before`` null; ``delta`` +inf when the step made it unreachable, -inf when it made it
  reachable again, NaN when it stayed unreachable).
- ``outcome``: ``progress`` (delta < 0), ``neutral`` (delta == 0, including staying unreachable)
  or ``wasted`` (delta > 0, including making the goal unreachable): the per-step oracle regret.
- ``moved``: the step changed the cell (events ``moved`` and ``goal``).
- ``state_change``: what the step changed: ``changed`` (the position, the carried key or a
  mechanism: events moved, goal, pickup, swap, door_*, switch_*), ``facing`` (only the
  direction: a turn) or ``none`` (nothing at all: a bump, or a no-op pickup, toggle, done or
  invalid reply).
- ``unseen``: it moved onto a cell the episode had never stood on (the start cell counts as seen).
- ``revisit``: it moved onto a cell stood on before.
- ``turn``: a left/right action.
- ``position``: 1..n_steps, the step's place in its episode; ``n_steps``: the episode's steps.
- ``quarter``: 1..4, which quarter of the episode's steps it falls in.
- ``wall_bump``: a ``bump`` whose front cell is a wall (needs the maze; null when unknown);
  ``bump`` counts every blocked forward (walls, keys, closed doors, closed gates).
- ``on_live_switch``: it ends on a switch that controls at least one gate (needs the maze).
- ``next_reasoning``: the reasoning tokens of the episode's next turn (null on its last step).
- ``new_min``: the step, **not a turn**, reached a new minimum of the action distance: lower than
  the start distance and than the distance after every earlier step that was not a turn (the
  failure onset of ``analysis.failure.onset``). Turns are left out because the action distance
  counts the facing: a turn toward the goal lowers it by one without the agent going anywhere,
  and late in a stalled episode such turns would set the onset (the forward that follows
  such a turn is the step that counts).

The start cell is inferred from the first step, not the maze: a ``forward`` that moved came
from the cell behind the agent, anything else left the agent where it was. An agent only ever
stands on the start cell or on cells it moved onto, so a move reaches an unseen cell exactly
when its cell is not the start and appears at no earlier step of the episode.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from analysis.load import ALL, BUDGET_COLUMNS, Traces, unreadable
from env.maze import DIR_VECTORS, Maze
from traces import STEPS_DIR

MOVE_EVENTS = ("moved", "goal")
FACING_EVENTS = ("turned",)
NOTHING_EVENTS = ("bump", "noop")
# the trace columns the analyses read
TRACE_COLUMNS = ("maze_id", "step", "action", "event", "x", "y", "dir", "novel", "action_distance",
                 "tokens_out", "tokens_reasoning", "calls", "cost_usd", "tier", *BUDGET_COLUMNS)
# DuckDB's own memory (it spills to its temporary folder beyond it); the report's other parts
# (the episodes table, figures) need the rest of a 4 GB budget
MEMORY_LIMIT = "1GB"
# DuckDB's allocator (jemalloc) gives back what a query freed: its background threads return it
# within seconds, and a query that freed or held more than a few MB returns it when it ends. By
# default it keeps up to 128 MB after each query (512 MB after a bulk free) until it decays, held
# while the sections after it run (docs/report.md, *Memory and time*)
ALLOCATOR: dict[str, str | bool] = {"allocator_background_threads": True, "allocator_flush_threshold": "4MB",
             "allocator_bulk_deallocation_flush_threshold": "4MB"}


def _sql_list(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def _dir_offset(column: str, axis: int) -> str:
    """The x (axis 0) or y (axis 1) offset of the cell in front of an agent facing ``column``."""
    return f"CASE {column} " + " ".join(f"WHEN {d} THEN {v[axis]}" for d, v in enumerate(DIR_VECTORS)) + " END"


_MOVED = f"coalesce(event IN {_sql_list(MOVE_EVENTS)}, false)"
_INF = "'inf'::DOUBLE"
_ANNOTATE = f"""
CREATE TABLE steps AS
WITH firsts AS (
    SELECT ep, x, y, min(step) AS first_step FROM raw_steps GROUP BY ep, x, y
), ordered AS (
    SELECT *,
        {_MOVED} AS moved,
        row_number() OVER w AS position,
        count(*) OVER (PARTITION BY ep) AS n_steps,
        lag(action_distance) OVER w AS d_prev,
        lead(tokens_reasoning) OVER w AS next_reasoning,
        -- the least distance before this step over steps that were not turns (``new_min``)
        min(CASE WHEN coalesce(action IN ('left', 'right'), false) THEN {_INF}
                 ELSE coalesce(action_distance::DOUBLE, {_INF}) END)
            OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS best_before,
        first_value(x) OVER w AS x0, first_value(y) OVER w AS y0, first_value(dir) OVER w AS dir0,
        first_value({_MOVED}) OVER w AS moved0
    FROM raw_steps
    WINDOW w AS (PARTITION BY ep ORDER BY step)
), placed AS (
    SELECT o.*,
        CASE WHEN position = 1 THEN d_start ELSE d_prev END AS d_before,
        x0 - CASE WHEN moved0 THEN {_dir_offset("dir0", 0)} ELSE 0 END AS start_x,
        y0 - CASE WHEN moved0 THEN {_dir_offset("dir0", 1)} ELSE 0 END AS start_y,
        x + {_dir_offset("dir", 0)} AS front_x, y + {_dir_offset("dir", 1)} AS front_y,
        f.first_step
    FROM ordered o LEFT JOIN firsts f USING (ep, x, y)
)
SELECT
    p.ep, p.arm, p.maze_id, p.step, p.action, p.event, p.x, p.y, p.dir, p.novel, p.action_distance,
    p.tokens_out, p.tokens_reasoning, p.calls, p.cost_usd, p.tier, {", ".join(f"p.{c}" for c in BUDGET_COLUMNS)},
    p.position, p.n_steps, least(4 * (p.position - 1) // p.n_steps + 1, 4) AS quarter,
    p.d_before,
    CASE WHEN p.action_distance IS NULL AND p.d_before IS NULL THEN 'nan'::DOUBLE
         WHEN p.action_distance IS NULL THEN {_INF}
         WHEN p.d_before IS NULL THEN -{_INF}
         ELSE (p.action_distance - p.d_before)::DOUBLE END AS delta,
    CASE WHEN p.action_distance IS NULL AND p.d_before IS NULL THEN 'neutral'
         WHEN p.action_distance IS NULL THEN 'wasted'
         WHEN p.d_before IS NULL OR p.action_distance < p.d_before THEN 'progress'
         WHEN p.action_distance > p.d_before THEN 'wasted'
         ELSE 'neutral' END AS outcome,
    p.moved,
    CASE WHEN p.event IN {_sql_list(FACING_EVENTS)} THEN 'facing'
         WHEN p.event IN {_sql_list(NOTHING_EVENTS)} THEN 'none'
         ELSE 'changed' END AS state_change,
    coalesce(p.action IN ('left', 'right'), false) AS turn,
    coalesce(p.event = 'bump', false) AS bump,
    coalesce(p.moved AND p.step = p.first_step AND NOT (p.x = p.start_x AND p.y = p.start_y), false) AS unseen,
    p.moved AND NOT unseen AS revisit,
    CASE WHEN size.maze_id IS NULL THEN NULL
         ELSE p.event = 'bump' AND (p.front_x < 0 OR p.front_y < 0 OR p.front_x >= size.width
                                    OR p.front_y >= size.height OR wall.maze_id IS NOT NULL) END AS wall_bump,
    CASE WHEN size.maze_id IS NULL THEN NULL ELSE live.maze_id IS NOT NULL END AS on_live_switch,
    p.next_reasoning,
    NOT coalesce(p.action IN ('left', 'right'), false)
        AND coalesce(p.action_distance::DOUBLE, {_INF}) < least(coalesce(p.best_before, {_INF}),
                                                                coalesce(p.d_start::DOUBLE, {_INF})) AS new_min
FROM placed p
LEFT JOIN maze_sizes size ON size.maze_id = p.maze_id
LEFT JOIN maze_walls wall ON wall.maze_id = p.maze_id AND wall.x = p.front_x AND wall.y = p.front_y
LEFT JOIN live_switches live ON live.maze_id = p.maze_id AND live.x = p.x AND live.y = p.y
"""


def _maze_tables(mazes: dict[str, Maze | None]) -> dict[str, pa.Table]:
    """Per known maze: its size, its wall cells and the cells of its live switches (those that
    control a gate); the steps join them to tell wall bumps and stands on a live switch."""
    sizes, walls, live = [], [], []
    for mid, maze in mazes.items():
        if maze is None:
            continue
        sizes.append({"maze_id": mid, "width": maze.width, "height": maze.height})
        xs, ys = maze.walls.nonzero()
        walls += [{"maze_id": mid, "x": int(x), "y": int(y)} for x, y in zip(xs, ys, strict=True)]
        cells = {(int(s.pos[0]), int(s.pos[1])) for s in maze.switches if s.controls}
        live += [{"maze_id": mid, "x": x, "y": y} for x, y in sorted(cells)]
    cell = pa.schema([("maze_id", pa.string()), ("x", pa.int32()), ("y", pa.int32())])
    size = pa.schema([("maze_id", pa.string()), ("width", pa.int32()), ("height", pa.int32())])
    return {"maze_sizes": pa.Table.from_pylist(sizes, size), "maze_walls": pa.Table.from_pylist(walls, cell),
            "live_switches": pa.Table.from_pylist(live, cell)}


def _close(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    con.close()
    shutil.rmtree(folder, ignore_errors=True)


class StepTable:
    """The annotated steps of some runs: DuckDB tables ``steps`` (the ``TRACE_COLUMNS`` and the
    derived columns above, keyed by ``ep``) and ``episode_keys`` (``ep``, ``run``, ``episode_id``,
    ``arm``, ``solved``, ``d_start``), in a temporary database deleted by ``close`` (or when the
    table is garbage-collected)."""

    def __init__(self, references: tuple[str, ...] = ()) -> None:
        self.references = references  # arms of built-in agents: never pooled into ``all``
        self.folder = Path(tempfile.mkdtemp(prefix="gridbench-steps-"))
        self.con = duckdb.connect(str(self.folder / "steps.duckdb"), config={
            "memory_limit": MEMORY_LIMIT, "temp_directory": str(self.folder / "spill"),
            "preserve_insertion_order": False, **ALLOCATOR})
        self.con.execute("SET enable_progress_bar = false")  # the report shows its own progress
        self._finalizer = weakref.finalize(self, _close, self.con, self.folder)

    def close(self) -> None:
        self._finalizer()

    def query(self, sql: str) -> pd.DataFrame:
        """A query's (small) result as pandas, with the types a read of Parquet would give."""
        return self.con.sql(sql).to_arrow_table().to_pandas()

    def per_arm(self, aggregates: str, by: str | None = None, where: str = "TRUE") -> pd.DataFrame:
        """``aggregates`` (SQL over ``steps``) per arm, and per ``by`` too when given, plus the
        pooled arm ``all`` of the model arms (never the ``references``) when the selected steps hold
        more than one model arm; ordered by ``by``."""
        group = f", {by}" if by else ""
        models = f"({where}) AND arm NOT IN (SELECT arm FROM reference_arms)"
        t = self.query(f"SELECT arm{group}, {aggregates} FROM steps WHERE {where} GROUP BY arm{group} UNION ALL "
                       f"SELECT '{ALL}' AS arm{group}, {aggregates} FROM steps WHERE {models}"
                       f"{f' GROUP BY {by}' if by else ''}{f' ORDER BY {by}' if by else ''}")
        arms = t.loc[t["arm"] != ALL, "arm"]
        if arms[~arms.isin(self.references)].nunique() <= 1:
            return t[t["arm"] != ALL].reset_index(drop=True)
        return t.reset_index(drop=True)

    def per_episode(self, aggregates: str, where: str = "TRUE") -> pd.DataFrame:
        """``aggregates`` per episode with selected steps, keyed by run and episode id, in that order."""
        return self.query(f"SELECT k.run, k.episode_id, a.* EXCLUDE (ep) FROM (SELECT ep, {aggregates} FROM steps "
                          f"WHERE {where} GROUP BY ep) a JOIN episode_keys k USING (ep) ORDER BY k.run, k.episode_id")

    def frame(self) -> pd.DataFrame:
        """Every step with its run, episode id and derived columns, in episode and step order.
        This loads the whole table: for tests and small runs, never for the report."""
        return self.query("SELECT k.run, k.episode_id, s.* EXCLUDE (ep) FROM steps s JOIN episode_keys k USING (ep) "
                          "ORDER BY k.run, k.episode_id, s.step")


def annotate(traces: Traces) -> StepTable:
    """Read the steps of ``traces``' episodes (each run's steps table scanned once) and add the
    derived columns."""
    table = StepTable(tuple(traces.references))
    try:
        _fill(table, traces)
    except BaseException:
        table.close()
        raise
    return table


def _fill(table: StepTable, traces: Traces) -> None:
    con = table.con
    eps = traces.episodes
    keys = pd.DataFrame({"ep": range(len(eps)), "run": eps["run"].astype(str), "episode_id": eps["episode_id"].astype(str),
                         "arm": eps["arm"].astype(str), "solved": eps["solved"].astype(bool),
                         "d_start": eps["d_start_action"].astype("Int32")})
    con.register("keys_frame", pa.Table.from_pandas(keys, preserve_index=False))
    con.execute("CREATE TABLE episode_keys AS SELECT * FROM keys_frame")
    con.unregister("keys_frame")
    con.execute("CREATE TABLE reference_arms (arm VARCHAR)")
    if table.references:
        con.executemany("INSERT INTO reference_arms VALUES (?)", [[a] for a in table.references])
    for name, t in _maze_tables(traces.mazes).items():
        con.register(f"{name}_frame", t)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
        con.unregister(f"{name}_frame")

    columns = ", ".join(f"s.{c}" for c in TRACE_COLUMNS)
    for i, run in enumerate(traces.steps):
        verb = "CREATE TABLE raw_steps AS" if i == 0 else "INSERT INTO raw_steps"
        try:
            # a stream of only the columns read; file footers are not kept once read (see load.py)
            con.register("trace_steps", run.dataset.scanner(columns=["run", "episode_id", *TRACE_COLUMNS],
                                                            cache_metadata=False).to_reader())
            # the run folder's name stands in for a blank run column, as for the episodes
            con.execute(f"""{verb} SELECT k.ep, k.arm, k.d_start, {columns}
                FROM trace_steps s JOIN episode_keys k
                  ON k.run = coalesce(nullif(s.run, ''), $run) AND k.episode_id = s.episode_id""",
                        {"run": run.name})
        except (duckdb.Error, pa.ArrowException, OSError) as e:
            # DuckDB wraps the Arrow error that names the damaged file: keep Arrow's words
            cause = str(e).split(" failed: ", 1)[-1].removeprefix("Invalid: ")
            raise unreadable(run.folder, STEPS_DIR, OSError(cause)) from None
        finally:
            con.unregister("trace_steps")
    con.execute(_ANNOTATE)
    con.execute("DROP TABLE raw_steps")
