"""Death tiles (kill cells): entering one puts the maze back at its start, or under
``rules.death: fail`` (multinet-pr57) ends the episode."""

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Literal, get_args

from env.mechanics.base import (
    MULTINET_PR57,
    MULTINET_R1,
    Glyph,
    Laying,
    Mechanic,
    Pos,
    Scene3D,
    Setting,
    Strict,
    Words,
)

Ending = Literal["reset", "fail"]  # multinet-pr57: what entering a death tile does
ENDINGS: tuple[str, ...] = get_args(Ending)
# multinet-pr57 only: a death tile puts the maze back to its start and the episode goes on (the
# harness), or ends the episode in failure (what the study's maze descriptions say); left out of
# the file at its default, so multinet-r1 checksums stay as they were
SETTING = Setting("death", Ending, "reset", rulesets=(MULTINET_PR57,), omitted_at_default=True, rank=2)


class KillObject(Strict):
    id: str
    kind: Literal["kill"]
    pos: Pos


def _draw(img: Any, state: int, color: str) -> None:
    """A pale skull on a dark red disc."""
    from env.drawing import Circle, fill_coords

    fill_coords(img, Circle(0.5, 0.5, 0.48), (90, 12, 12))
    fill_coords(img, Circle(0.5, 0.42, 0.30), (230, 230, 230))
    for x in (0.38, 0.62):
        fill_coords(img, Circle(x, 0.38, 0.08), (20, 20, 20))
    fill_coords(img, Circle(0.5, 0.58, 0.06), (20, 20, 20))


def _draw_neutral(img: Any, state: int, color: str) -> None:
    """An olive bar down the left half."""
    from env.drawing import Rect, fill_coords

    fill_coords(img, Rect(0.10, 0.46, 0.10, 0.90), (128, 128, 0))


# entering one puts everything back as it was at the start, so the agent never stands on it; under
# rules.death "fail" the last frame shows it dead there
GLYPH = Glyph("kill", _draw, _draw_neutral, overlap=False, color="red", agent_shown=True, index=15)


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A skull."""
    from env.objects import Tile

    return Tile(GLYPH)


def draw_kill(b: Any, o: Any) -> None:
    from env.render3d.cameras import cell_centre
    from env.render3d.scene import DARK

    cx, cy = cell_centre(*o.pos)
    b.disc(cx, cy, 0.46, 0.0, 0.03, (0.35, 0.05, 0.05))
    z = 0.35 * b.camera.wall_height + 0.1
    b.geom("sphere", (0.2,), (cx, cy, z), (0.9, 0.9, 0.9))  # a skull: cranium, sockets, jaw
    for dx in (-0.08, 0.08):
        for dy in (-0.08, 0.08):
            b.geom("sphere", (0.06,), (cx + dx, cy + dy, z + 0.12), DARK)
    b.box(cx, cy, (0.12, 0.12, 0.04), z - 0.24, (0.9, 0.9, 0.9))


def tiles() -> Iterator[Any]:
    from env.objects import Tile

    yield Tile(GLYPH)


def lay(where: Laying, rng: Any) -> list[dict[str, Any]] | None:
    """A death tile where a detour round it exists but is longer."""
    from env.generator.topology import bfs_dist, connected

    far = len(where.path) - 1
    floor = set(where.floor)
    around = [c for c in where.free if connected(floor - {c})
              and bfs_dist(where.path[0], floor - {c}).get(where.path[-1], far) > far]
    if not around:
        return None
    return [{"id": "death1", "kind": "kill", "pos": list(rng.choice(around))}]


def fires(maze: Any, state: Any, cell: Pos) -> tuple[Any, str, bool] | None:
    """A move ending on a death tile: under multinet-r1 the maze back at its start (``reset``);
    under multinet-pr57 the same (``died``), or with ``rules.death: fail`` the agent dead on the
    tile (the episode is over). After a reset the start state stands exactly as it was."""
    from env.state import initial_state

    if cell not in maze.cells_of("kill"):
        return None
    if maze.ruleset != MULTINET_PR57:
        return initial_state(maze), "reset", True
    if maze.rulebook.death == "fail":
        return replace(state, pos=cell, latched=False), "died", False
    return initial_state(maze), "died", True


def over(maze: Any, state: Any) -> bool:
    """Dead on a death tile: under ``rules.death: fail`` nothing happens any more."""
    return bool(maze.rulebook.death == "fail" and state.pos in maze.cells_of("kill"))


def study_reads(r: Any, mech: dict[str, Any]) -> list[dict[str, Any]]:
    """``kill_cells`` and the later harness's ``death_portals`` (the same rule): cells without ids
    in the file, named here ``kill<i>`` and ``death<i>``."""
    return [{"id": f"{prefix}{i}", "kind": "kill", "pos": r.place(c, f"mechanisms.{name}[{i}]")}
            for name, prefix in (("kill_cells", "kill"), ("death_portals", "death"))
            for i, c in enumerate(r.cells(mech, name))]


def study_lines(maze: Any, state: Any, obj: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("- a $kill at {pos}", {"pos": obj.pos})]


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of a death tile, per forward step: tried, a forward aimed into it (walked, ridden
    or sent there by another tile); worked, it fired (a death); never used: nothing is gained from
    one."""
    from env.state import r1_landing

    tried = r1_landing(maze, into) == obj.pos
    return tried, tried and event == "died", False


MECHANIC = Mechanic(
    name="death", label="death tile", tabulated=True, kinds=("kill",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("kill_cells", "death_portals"), later_fields=("death_portals",), removal="no-deaths",
    study_reads=study_reads, study_rank=4,
    discovered=True,
    summary="entering it puts the maze back at its start (rules.death: fail ends the episode)",
    words={"classic": Words({"kill": ("skull", "skulls")}, {"kill": "x"}),
           "neutral": Words({"kill": ("nuv", "nuvs")}, {"kill": "n"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"kill": Scene3D(draw_kill)},
    glyphs=(GLYPH,), detours=True, objects=(KillObject,), fires=fires, over=over, study_lines=study_lines,
    events=("reset", "died"), settings=(SETTING,), module=__name__,
)
