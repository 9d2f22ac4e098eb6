"""A maze as a MuJoCo scene, built once per maze and camera (docs/render3d.md#the-scene).

The scene is geometry only: nothing collides and the physics is never stepped. Everything a
state can change has geoms for each of its looks, each geom tagged ``<object id>:<look>``; a
frame shows the tagged geoms whose tag is in the state's set of looks (``looks``) and moves the
others to a group that is never drawn, so a new state never recompiles the model. Keys and the
agent are mocap bodies, moved to their cells.

Each kind of object is one entry of ``MECHANISMS``, gathered from the mechanic that draws it
(``env.mechanics``, ``Mechanic.scene``): how it is drawn (its geoms, with their tags) and which
look a state gives it. A maze holding a kind with no entry is refused when its scene is asked
for (``check_drawable``), never drawn half.
"""

from __future__ import annotations

from typing import Any

from env.errors import BadInput
from env.maze import CLASSIC, Maze
from env.mechanics import MECHANICS
from env.mechanics.base import Scene3D
from env.mechanics.key_door import draw_key
from env.render3d.cameras import Camera, cell_centre
from env.state import MazeState

# colours, RGB 0..1: the 2D frames' own (Minigrid's), so a colour reads the same in both
SPEC_COLORS = {
    "red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0),
    "purple": (0.44, 0.19, 1.0), "yellow": (1.0, 1.0, 0.0), "grey": (0.39, 0.39, 0.39),
    "white": (1.0, 1.0, 1.0), "cyan": (0.0, 219 / 255, 219 / 255), "brown": (139 / 255, 90 / 255, 43 / 255),
}
FLOOR = (0.82, 0.82, 0.80)
GRID_LINE = (0.52, 0.53, 0.57)
WALL = (0.23, 0.24, 0.31)
GOAL = (0.20, 0.80, 0.35)
AGENT = (0.86, 0.10, 0.10)
DARK = (0.08, 0.08, 0.10)
HIDDEN_GROUP = 5  # geoms of a look the state does not have sit here; the renderer never draws it
TILE_INSET = 0.03  # floor tiles leave this much of the grid line at each edge of a cell


def _rgba(rgb: tuple[float, float, float], alpha: float = 1.0) -> str:
    return " ".join(f"{c:.3f}" for c in (*rgb, alpha))


def mixed(a: tuple[float, float, float], b: tuple[float, float, float], k: float) -> tuple[float, float, float]:
    """``a`` with a share ``k`` of ``b``."""
    return (a[0] + k * (b[0] - a[0]), a[1] + k * (b[1] - a[1]), a[2] + k * (b[2] - a[2]))


def scaled(rgb: tuple[float, float, float], k: float) -> tuple[float, float, float]:
    return (rgb[0] * k, rgb[1] * k, rgb[2] * k)


class SceneBuilder:
    """Collects MJCF geoms; a tagged geom is named so the renderer can find it after compiling."""

    def __init__(self, maze: Maze, camera: Camera):
        self.maze, self.camera = maze, camera
        self.world: list[str] = []
        self.bodies: list[str] = []
        self.tags: dict[str, str] = {}  # geom name -> tag
        self._body: list[str] | None = None

    def geom(self, kind: str, size: tuple[float, ...], pos: tuple[float, float, float], rgb: tuple[float, float, float],
             tag: str | None = None, alpha: float = 1.0, **attrs: Any) -> None:
        extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
        name = ""
        if tag is not None:
            name = f"t{len(self.tags)}"
            self.tags[name] = tag
            name = f' name="{name}"'
        line = (f'<geom{name} type="{kind}" size="{" ".join(f"{s:.4f}" for s in size)}" '
                f'pos="{pos[0]:.4f} {pos[1]:.4f} {pos[2]:.4f}" rgba="{_rgba(rgb, alpha)}"{extra}/>')
        (self._body if self._body is not None else self.world).append(line)

    def box(self, cx: float, cy: float, half: tuple[float, float, float], z0: float, rgb: tuple[float, float, float],
            tag: str | None = None, **attrs: Any) -> None:
        """A box of half sizes ``half`` standing on height ``z0`` over ``(cx, cy)``."""
        self.geom("box", half, (cx, cy, z0 + half[2]), rgb, tag, **attrs)

    def disc(self, cx: float, cy: float, r: float, z0: float, h: float, rgb: tuple[float, float, float],
             tag: str | None = None, **attrs: Any) -> None:
        """A flat cylinder of radius ``r`` and height ``h`` on height ``z0``."""
        self.geom("cylinder", (r, h / 2), (cx, cy, z0 + h / 2), rgb, tag, **attrs)

    def body(self, name: str, pos: tuple[float, float, float]) -> _Body:
        return _Body(self, name, pos)


class _Body:
    def __init__(self, builder: SceneBuilder, name: str, pos: tuple[float, float, float]):
        self.builder, self.name, self.pos = builder, name, pos

    def __enter__(self) -> SceneBuilder:
        self.builder._body = [f'<body name="{self.name}" mocap="true" pos="{self.pos[0]:.4f} {self.pos[1]:.4f} {self.pos[2]:.4f}">']
        return self.builder

    def __exit__(self, *exc: Any) -> None:
        lines = self.builder._body or []
        self.builder._body = None
        self.builder.bodies.extend([*lines, "</body>"])


# ---- the mechanisms: helpers their drawings share (each mechanic draws its own: env.mechanics) ----

def spans_x(maze: Maze, pos: tuple[int, int]) -> bool:
    """A barrier on ``pos`` spans the x axis (its passage runs north-south)? Walls west and east
    mean the passage runs north-south; otherwise it is taken to run east-west."""
    x, y = pos
    walls = maze.walls
    if walls[x - 1, y] and walls[x + 1, y]:
        return True
    if walls[x, y - 1] and walls[x, y + 1]:
        return False
    return True


def span(b: SceneBuilder, pos: tuple[int, int], along: float, across: float, h: float, z0: float, offset: float,
          rgb: tuple[float, float, float], tag: str) -> None:
    """A box across a barrier's passage: ``along`` is its half length across the passage,
    ``offset`` moves it along the span (so posts sit at the ends)."""
    cx, cy = cell_centre(*pos)
    if spans_x(b.maze, pos):
        b.box(cx + offset, cy, (along, across, h / 2), z0, rgb, tag)
    else:
        b.box(cx, cy + offset, (across, along, h / 2), z0, rgb, tag)


# every kind a maze file may hold but keys (mocap bodies, moved rather than shown or hidden), as
# each mechanic draws it (env.mechanics, ``Mechanic.scene``)
MECHANISMS: dict[str, Scene3D] = {kind: scene for m in MECHANICS for kind, scene in m.scene.items()}
KEY_HEIGHT = 0.10  # keys lie a little above the floor, so a first-person eye sees them


def check_drawable(maze: Maze, source: str = "render") -> None:
    """Refuse, one line, a maze the 3D frames cannot draw: a kind with no drawing, a colour
    with no RGB, a skin other than the classic one."""
    if maze.skin != CLASSIC:
        raise BadInput(source, "backend", f"{maze.id}: the mujoco3d backend draws the classic skin only (this maze: {maze.skin})")
    for i, o in enumerate(maze.objects):
        if o.kind != "key" and o.kind not in MECHANISMS:
            raise BadInput(source, "backend", f"{maze.id}: objects[{i}]: the mujoco3d backend cannot draw a {o.kind!r}")
        color = getattr(o, "color", None)
        if color is not None and color not in SPEC_COLORS:
            raise BadInput(source, "backend", f"{maze.id}: objects[{i}].color: the mujoco3d backend has no colour {color!r}")


def looks(maze: Maze, state: MazeState, camera: Camera, switch_frames: str) -> frozenset[str]:
    """The tags a frame of ``state`` shows."""
    shown = set()
    per_kind: dict[str, int] = {}
    for o in maze.objects:
        i = per_kind.get(o.kind, 0)
        per_kind[o.kind] = i + 1
        mech = MECHANISMS.get(o.kind)
        if mech is None or mech.look is None:
            continue
        look = mech.look(maze, state, i)
        if o.kind == "switch" and switch_frames == "study":
            look = "any"
        shown.add(f"{o.id}:{look}")
    if not camera.first_person:
        shown.add("agent")
        if state.carrying >= 0:
            shown.add(f"carry:{state.carrying}")
    return frozenset(shown)


def wall_blocks(maze: Maze) -> list[tuple[int, int, int, int]]:
    """The walls as rectangles ``(x0, y0, x1, y1)`` (cell edges, ends exclusive): each row's runs
    of wall cells, a run merged with the one below it when they span the same columns."""
    open_runs: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    done: list[tuple[int, int, int, int]] = []
    for y in range(maze.height):
        runs, x = [], 0
        while x < maze.width:
            if maze.walls[x, y]:
                start = x
                while x < maze.width and maze.walls[x, y]:
                    x += 1
                runs.append((start, x))
            else:
                x += 1
        still: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        for run in runs:
            x0, y0, x1, _ = open_runs.pop(run, (run[0], y, run[1], y))
            still[run] = (x0, y0, x1, y + 1)
        done.extend(open_runs.values())
        open_runs = still
    return done + list(open_runs.values())


def build_scene(maze: Maze, camera: Camera, side: int) -> tuple[str, dict[str, str]]:
    """The MJCF text of ``maze`` seen by ``camera`` in ``side`` x ``side`` frames, and its tags."""
    check_drawable(maze)
    b = SceneBuilder(maze, camera)
    w, h = maze.width, maze.height
    size = max(w, h)
    # the ground: grid-line coloured under everything, one inset tile per cell that is not a wall
    b.box(w / 2, -h / 2, (size, size, 0.01), -0.03, GRID_LINE)
    occupied = {o.pos for o in maze.objects if o.kind in ("door", "gate")}
    for x0, y0, x1, y1 in wall_blocks(maze):  # few boxes draw faster than one per cell
        b.box((x0 + x1) / 2, -(y0 + y1) / 2, ((x1 - x0) / 2, (y1 - y0) / 2, camera.wall_height / 2), 0.0, WALL)
    for x in range(w):
        for y in range(h):
            cx, cy = cell_centre(x, y)
            if (x, y) == maze.goal:
                b.box(cx, cy, (0.5 - TILE_INSET, 0.5 - TILE_INSET, 0.01), -0.01, GOAL)
            elif not maze.walls[x, y] and (x, y) not in occupied:
                b.box(cx, cy, (0.5 - TILE_INSET, 0.5 - TILE_INSET, 0.005), -0.01, FLOOR)
    for o in maze.objects:
        if o.kind != "key":
            MECHANISMS[o.kind].draw(b, o)
    for i, k in enumerate(maze.keys):
        cx, cy = cell_centre(*k.pos)
        with b.body(f"key{i}", (cx, cy, KEY_HEIGHT)):
            draw_key(b, k)
    with b.body("agent", (0.0, 0.0, 0.0)):
        # a wedge pointing east (the body turns it): a mesh, since MuJoCo has no wedge primitive
        b.geom("mesh", (), (0.0, 0.0, 0.0), AGENT, "agent", mesh="wedge")
        for i, k in enumerate(maze.keys):  # the carried key floats above the agent
            draw_key(b, k, 0.7, f"carry:{i}", z0=0.3)
    return _mjcf(maze, camera, side, b), b.tags


def _mjcf(maze: Maze, camera: Camera, side: int, b: SceneBuilder) -> str:
    wedge = "-0.32 -0.26 0  0.36 0 0  -0.32 0.26 0  -0.32 -0.26 0.22  0.36 0 0.22  -0.32 0.26 0.22"
    proj = f'projection="orthographic" fovy="{max(maze.width, maze.height):.4f}"' if camera.orthographic \
        else f'fovy="{camera.fovy:.4f}"'
    return "\n".join([
        f'<mujoco model="{maze.id}">',
        '<compiler angle="degree"/>',
        '<statistic extent="1" center="0 0 0"/>',
        "<visual>",
        f'<global offwidth="{side}" offheight="{side}"/>',
        '<quality shadowsize="0" offsamples="0"/>',
        '<headlight ambient="0.5 0.5 0.5" diffuse="0.3 0.3 0.3" specular="0 0 0"/>',
        f'<map znear="0.02" zfar="{4 * max(maze.width, maze.height) + 40}"/>',
        "</visual>",
        "<asset>",
        f'<mesh name="wedge" vertex="{wedge}"/>',
        "</asset>",
        '<default><geom contype="0" conaffinity="0" group="0"/></default>',
        "<worldbody>",
        '<light directional="true" castshadow="false" pos="0 0 10" dir="0.3 0.4 -1" diffuse="0.45 0.45 0.45" specular="0 0 0"/>',
        f'<camera name="view" pos="0 0 10" {proj}/>',
        *b.world,
        *b.bodies,
        "</worldbody>",
        "</mujoco>",
    ])
