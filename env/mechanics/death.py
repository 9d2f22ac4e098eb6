"""Death tiles (kill cells): entering one puts the maze back at its start, or under
``rules.death: fail`` (multinet-pr57) ends the episode."""

from collections.abc import Iterator
from typing import Any

from env.mechanics.base import MULTINET_PR57, MULTINET_R1, Laying, Mechanic, Scene3D, Words


def draws(maze: Any, obj: Any, value: Any, switch_frames: str) -> Any:
    """A skull."""
    from env.objects import KillCell

    return KillCell()


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
    from env.objects import KillCell

    yield KillCell()


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


def stages(maze: Any, obj: Any, move: Any, into: Any, event: Any, seen: dict[str, Any]) -> tuple[bool, bool, bool]:
    """Discovery of a death tile, per forward step: tried, a forward aimed into it (walked, ridden
    or through a portal); worked, it fired (a death); never used: nothing is gained from one."""
    from env.state import r1_landing

    tried = r1_landing(maze, into) == obj.pos
    return tried, tried and event == "died", False


MECHANIC = Mechanic(
    name="death", label="death tile", kinds=("kill",), rulesets=(MULTINET_R1, MULTINET_PR57),
    study_fields=("kill_cells", "death_portals"), later_fields=("death_portals",), removal="no-deaths",
    discovered=True,
    summary="entering it puts the maze back at its start (rules.death: fail ends the episode)",
    words={"classic": Words({"kill": ("skull", "skulls")}, {"kill": "x"}),
           "neutral": Words({"kill": ("nuv", "nuvs")}, {"kill": "n"})},
    draws=draws, tiles=tiles, stages=stages, lay=lay, scene={"kill": Scene3D(draw_kill)},
    detours=True, module=__name__,
)
