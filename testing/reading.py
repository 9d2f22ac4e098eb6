"""What the scripted server reads of a chat request, through gridbench's own code where it can.

The step a prompt asks about is found with the turn template's own ``current`` line
(``agents/prompts/turn.yaml``); the state a prompt shows is looked up whole among the text
projections (``env.text.text_projection``) and frames (``env.render.render_state``) of every state
the oracle's sweep reaches (``env.oracle.distance_table``), so nothing here restates how a prompt
or a frame is laid out. Read by hand still: the walls of the last text map (its rows), and a
frame's walls (Minigrid's wall grey), to pick the maze among many when the request names none.
"""

from __future__ import annotations

import base64
import io
import re
import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used, so that a bare server starts without them
    import numpy as np

    from env.maze import Maze
    from env.state import MazeState

WALL_RGB = (100, 100, 100)  # Minigrid's wall grey
_MAP_ROW = re.compile(r"^\s*(\d+) (\S+)$")


def request_text(body: dict) -> str:
    texts = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p.get("text", "") for p in content if p.get("type") == "text"]
    return "\n".join(texts)


def request_images(body: dict) -> list[str]:
    """The data URIs of every image part in the request."""
    out = []
    for m in body.get("messages", []):
        if isinstance(m.get("content"), list):
            out += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
    return out


@cache
def _step_line() -> re.Pattern[str]:
    from agents.prompt import texts

    before, _, after = texts()["current"].partition("{step}")
    return re.compile(re.escape(before) + r"(\d+)" + re.escape(after.split("{", 1)[0]))


def step_asked(body: dict) -> int | None:
    """The step the prompt asks about (the turn template's ``current`` line), None when it names none."""
    found = _step_line().findall(request_text(body))
    return int(found[-1]) if found else None


def last_image(body: dict) -> np.ndarray | None:
    import numpy as np
    from PIL import Image

    uris = request_images(body)
    if not uris:
        return None
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(uris[-1].split(",", 1)[1]))).convert("RGB"))


def walls_match_image(grid: tuple[str, ...], pixels: np.ndarray) -> bool:
    """Does the frame show exactly these walls? A wall tile is grey at three inner points."""
    height, width = len(grid), len(grid[0])
    if pixels.shape[0] % height or pixels.shape[1] % width or pixels.shape[0] // height != pixels.shape[1] // width:
        return False
    t = pixels.shape[1] // width
    for y, row in enumerate(grid):
        for x, ch in enumerate(row):
            wall = all(tuple(pixels[y * t + int(f * t), x * t + int(f * t)]) == WALL_RGB for f in (0.25, 0.5, 0.75))
            if wall != (ch == "#"):
                return False
    return True


def walls_from_text(body: dict) -> tuple[str, ...] | None:
    """The wall layout of the last text map in the request, in maze-file form."""
    blob = request_text(body)
    at = blob.rfind("You are at (")
    if at < 0:
        return None
    rows: list[str] = []
    for line in reversed(blob[:at].splitlines()):
        m = _MAP_ROW.match(line)
        if m:
            rows.append(m.group(2))
            if m.group(1) == "0":
                break
        elif rows:
            break
    if not rows:
        return None
    return tuple("".join("#" if ch == "#" else "." for ch in row) for row in reversed(rows))


class MazeStates:
    """Every state the oracle's sweep of a maze reaches, by its text projection and by its frame
    at each tile size (built on first use). Keys of one colour look alike: of the states a text
    shows, one from which the goal can still be reached is taken."""

    def __init__(self, maze: Maze):
        self.maze = maze
        self._lock = threading.Lock()
        self._texts: dict[str, MazeState] | None = None
        self._text_lines: set[int] = set()
        self._frames: dict[int, dict[bytes, MazeState]] = {}
        self._frames3d: dict[tuple[str, int], dict[bytes, MazeState]] = {}
        self._study_texts: dict[str, MazeState] | None = None

    def _states(self) -> list[tuple[MazeState, bool]]:
        from env.oracle import distance_table

        table = distance_table(self.maze)
        return [(table.space.decode(int(i)), bool(d >= 0)) for i, d in zip(table.sweep.ids, table.dist, strict=True)]

    def _index(self, describe: Callable[[MazeState], Any]) -> dict[Any, MazeState]:
        """Every reachable state by what ``describe`` makes of it; where two states look alike,
        one from which the goal can still be reached."""
        out: dict[Any, MazeState] = {}
        for state, live in self._states():
            seen = describe(state)
            if live or seen not in out:
                out[seen] = state
        return out

    def from_text(self, body: dict) -> MazeState | None:
        """The state whose text projection ends at the request's last ``Inventory:`` line."""
        from env.text import text_projection

        with self._lock:
            if self._texts is None:
                self._texts = self._index(lambda state: text_projection(self.maze, state))
                self._text_lines = {text.count("\n") + 1 for text in self._texts}
        lines = request_text(body).splitlines()
        ends = [i for i, line in enumerate(lines) if line.startswith("Inventory: ")]
        if not ends:
            return None
        for n in self._text_lines:
            found = self._texts.get("\n".join(lines[ends[-1] - n + 1:ends[-1] + 1]))
            if found is not None:
                return found
        return None

    def from_study_text(self, body: dict) -> MazeState | None:
        """The state whose study-style description (``agents.study_prompt.current_text``) the
        request shows last, for the study's text-only observation."""
        from agents.study_prompt import current_text

        with self._lock:
            if self._study_texts is None:
                self._study_texts = self._index(lambda state: current_text(self.maze, state))
        request = request_text(body)
        best, where = None, -1
        for text, state in self._study_texts.items():
            at = request.rfind(text)
            if at > where:
                best, where = state, at
        return best

    def from_image(self, body: dict) -> MazeState | None:
        """The state whose frame is the request's last image, pixel for pixel: a 2D frame at any
        tile size, or a 3D frame from any camera (env.render3d)."""
        from env.render import render_state

        pixels = last_image(body)
        if pixels is None:
            return None
        if not walls_match_image(self.maze.grid, pixels):
            return self._from_3d(pixels)
        tile = pixels.shape[1] // self.maze.width
        with self._lock:
            index = self._frames.get(tile)
            if index is None:
                index = self._frames[tile] = {render_state(self.maze, s, tile).tobytes(): s for s, _ in self._states()}
        return index.get(pixels.tobytes())

    def _from_3d(self, pixels: np.ndarray) -> MazeState | None:
        """A 3D frame's state; where two states look alike (a first-person eye facing a wall),
        one from which the goal can still be reached."""
        import importlib.util

        if pixels.shape[0] != pixels.shape[1] or importlib.util.find_spec("mujoco") is None:
            return None
        from env.render3d import CAMERAS, frame3d

        side = int(pixels.shape[0])
        for camera in CAMERAS:
            def drawn(state: MazeState, camera: str = camera) -> bytes:
                return frame3d(self.maze, state, camera, side).tobytes()

            with self._lock:
                index = self._frames3d.get((camera, side))
                if index is None:
                    index = self._frames3d[(camera, side)] = self._index(drawn)
            found = index.get(pixels.tobytes())
            if found is not None:
                return found
        return None


def study_tokens(maze: Maze, state: MazeState, cardinal: bool) -> list[str]:
    """The oracle's plan from ``state`` in the study style's tokens (``plan_tokens``)."""
    from env.oracle import solve

    return plan_tokens(state, solve(maze, start=state).plan, cardinal)


def plan_tokens(state: MazeState, plan: list[int], cardinal: bool) -> list[str]:
    """A plan from ``state`` in the study style's tokens: its egocentric ones, or absolute moves
    (the turns before a forward folded into the heading it moves in)."""
    from agents.actions import token_of
    from env.state import DONE, FORWARD, LEFT, PICKUP, RIGHT

    if not cardinal:
        return [token_of(a) for a in plan]
    heading, out = state.dir, []
    for a in plan:
        if a in (LEFT, RIGHT):
            heading = (heading + (1 if a == RIGHT else -1)) % 4
        elif a == FORWARD:
            out.append(("MOVE_EAST", "MOVE_SOUTH", "MOVE_WEST", "MOVE_NORTH")[heading])
        else:
            out.append("PICKUP" if a == PICKUP else "DONE" if a == DONE else "INTERACT")
    return out
