"""One offscreen renderer per process: compiled scenes cached per maze, frames per state.

A process makes one GL context, the first time it draws a 3D frame, and keeps it. Each maze,
camera and frame size gets its scene compiled once (``env.render3d.scene``) with its own GPU
context; a frame then only moves the mocap bodies, the camera and the groups of the tagged
geoms, and draws. Frames are cached on (scene, state), so a state shown twice (the current
frame, then the same state among the recent ones) is drawn once.

A GL context does not survive ``fork``: a forked child that draws would hang. A renderer made in
one process refuses to draw in another (it says to spawn instead); Ray actors and spawned
processes make their own.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from env.maze import Maze
from env.render3d import hud
from env.render3d.cameras import CAMERAS, DIRECTION_QUATS, Camera, cell_centre, eye_pose
from env.render3d.gl import import_mujoco
from env.render3d.scene import HIDDEN_GROUP, KEY_HEIGHT, build_scene, looks
from env.state import MazeState

SKY = (190, 210, 232)
MAX_SIDE = 2048  # the largest frame: the GL context's buffer is this big
SCENES_KEPT = 16  # compiled scenes (with their GPU contexts) kept per process
FRAMES_KEPT = 512  # frames kept per process (a 256 px frame is 192 KiB)


@dataclass
class _Scene:
    model: Any
    data: Any
    context: Any  # MjrContext
    scene: Any  # MjvScene
    option: Any  # MjvOption
    camera: Any  # MjvCamera, fixed to the model's "view"
    tag_ids: dict[str, np.ndarray]  # tag -> its geoms' ids
    tagged: np.ndarray  # ids of every tagged geom
    key_mocap: list[int]
    agent_mocap: int
    camera_id: int
    preset: Camera
    maze: Maze
    side: int


class Renderer:
    """The process's renderer (``renderer()``); thread-safe, one frame at a time."""

    def __init__(self) -> None:
        self.mujoco = import_mujoco()
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.gl = self.mujoco.GLContext(MAX_SIDE, MAX_SIDE)
        self.gl.make_current()
        self.current_thread = threading.get_ident()
        self.scenes: OrderedDict[tuple, _Scene] = OrderedDict()
        self.frames: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def _check_process(self) -> None:
        if os.getpid() != self.pid:
            raise RuntimeError("a 3D renderer cannot draw in a forked child (its GL context would hang): "
                               "start the worker with the 'spawn' method or as a Ray actor")

    def _current(self) -> None:
        if threading.get_ident() != self.current_thread:
            self.gl.make_current()
            self.current_thread = threading.get_ident()

    def scene(self, maze: Maze, camera: str, side: int) -> _Scene:
        key = (maze.checksum, camera, side)
        found = self.scenes.get(key)
        if found is not None:
            self.scenes.move_to_end(key)
            return found
        mj = self.mujoco
        preset = CAMERAS[camera]
        xml, tags = build_scene(maze, preset, side)
        model = mj.MjModel.from_xml_string(xml)
        data = mj.MjData(model)
        self._current()
        context = mj.MjrContext(model, mj.mjtFontScale.mjFONTSCALE_100.value)
        mj.mjr_setBuffer(mj.mjtFramebuffer.mjFB_OFFSCREEN.value, context)
        option = mj.MjvOption()
        scene = mj.MjvScene(model, maxgeom=max(1000, 2 * model.ngeom))
        # a textured skybox costs a third of a frame in software GL: the sky is filled in after
        scene.flags[mj.mjtRndFlag.mjRND_SKYBOX.value] = 0
        option.geomgroup[HIDDEN_GROUP] = 0
        cam = mj.MjvCamera()
        cam.type = mj.mjtCamera.mjCAMERA_FIXED.value
        cam.fixedcamid = mj.mj_name2id(model, mj.mjtObj.mjOBJ_CAMERA.value, "view")
        by_tag: dict[str, list[int]] = {}
        for name, tag in tags.items():
            by_tag.setdefault(tag, []).append(mj.mj_name2id(model, mj.mjtObj.mjOBJ_GEOM.value, name))
        tag_ids = {t: np.array(ids, dtype=np.int64) for t, ids in by_tag.items()}
        tagged = np.concatenate(list(tag_ids.values())) if tag_ids else np.zeros(0, dtype=np.int64)
        body_mocap = lambda name: int(model.body_mocapid[mj.mj_name2id(model, mj.mjtObj.mjOBJ_BODY.value, name)])  # noqa: E731
        built = _Scene(model, data, context, scene, option, cam,
                       tag_ids, tagged, [body_mocap(f"key{i}") for i in range(len(maze.keys))], body_mocap("agent"),
                       int(cam.fixedcamid), preset, maze, side)
        self.scenes[key] = built
        while len(self.scenes) > SCENES_KEPT:
            _, old = self.scenes.popitem(last=False)
            old.context.free()
        return built

    def frame(self, maze: Maze, state: MazeState, camera: str, side: int, switch_frames: str) -> np.ndarray:
        """The frame of ``state`` (read-only; ``side`` x ``side`` x 3, uint8)."""
        key = (maze.checksum, camera, side, switch_frames, state)
        with self.lock:
            self._check_process()
            cached = self.frames.get(key)
            if cached is not None:
                self.frames.move_to_end(key)
                return cached
            sc = self.scene(maze, camera, side)
            rgb = self._draw(sc, state, switch_frames)
            rgb = hud.overlay(rgb, sc.preset, maze, state, switch_frames)
            rgb.setflags(write=False)
            self.frames[key] = rgb
            while len(self.frames) > FRAMES_KEPT:
                self.frames.popitem(last=False)
            return rgb

    def forget_frames(self) -> None:
        """Drop the cached frames (the scenes stay): the next frame of any state is drawn anew."""
        with self.lock:
            self.frames.clear()

    def _draw(self, sc: _Scene, state: MazeState, switch_frames: str) -> np.ndarray:
        mj, m, d = self.mujoco, sc.model, sc.data
        shown = looks(sc.maze, state, sc.preset, switch_frames)
        m.geom_group[sc.tagged] = HIDDEN_GROUP
        for tag in shown:
            ids = sc.tag_ids.get(tag)
            if ids is not None:
                m.geom_group[ids] = 0
        for i, mocap in enumerate(sc.key_mocap):  # a key carried or used up sinks out of sight
            pos = state.keys[i]
            d.mocap_pos[mocap] = (*cell_centre(*pos), KEY_HEIGHT) if pos is not None else (0.0, 0.0, -50.0)
        d.mocap_pos[sc.agent_mocap] = (*cell_centre(*state.pos), 0.0)
        d.mocap_quat[sc.agent_mocap] = DIRECTION_QUATS[state.dir]
        eye, axes = eye_pose(sc.preset, state.pos, state.dir, sc.maze.width, sc.maze.height)
        m.cam_pos[sc.camera_id] = eye
        quat = np.zeros(4)
        mj.mju_mat2Quat(quat, axes.flatten())
        m.cam_quat[sc.camera_id] = quat
        mj.mj_kinematics(m, d)
        mj.mj_camlight(m, d)
        self._current()
        mj.mjv_updateScene(m, d, sc.option, None, sc.camera, mj.mjtCatBit.mjCAT_ALL.value, sc.scene)
        # every scene has its own framebuffer in the one GL context: bind this one
        mj.mjr_setBuffer(mj.mjtFramebuffer.mjFB_OFFSCREEN.value, sc.context)
        rect = mj.MjrRect(0, 0, sc.side, sc.side)
        mj.mjr_render(rect, sc.scene, sc.context)
        rgb = np.empty((sc.side, sc.side, 3), dtype=np.uint8)
        mj.mjr_readPixels(rgb, None, rect, sc.context)
        rgb = np.ascontiguousarray(np.flipud(rgb))
        # nothing drawn is pure black (the darkest colour, lit by the ambient light, is not), so
        # what is left black is the background: the sky
        rgb[(rgb[..., 0] | rgb[..., 1] | rgb[..., 2]) == 0] = SKY
        return rgb

    def close(self) -> None:
        if os.getpid() != self.pid:
            return  # a forked child never touches its parent's context
        with self.lock:
            for sc in self.scenes.values():
                sc.context.free()
            self.scenes.clear()
            self.gl.free()


_RENDERER: Renderer | None = None
_RENDERER_LOCK = threading.Lock()


def renderer() -> Renderer:
    """The process's renderer, made on first use."""
    global _RENDERER
    with _RENDERER_LOCK:
        if _RENDERER is not None:
            _RENDERER._check_process()
        else:
            _RENDERER = Renderer()
            atexit.register(_RENDERER.close)
        return _RENDERER
