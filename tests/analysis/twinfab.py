"""Episode frames of agents whose failure is known by construction, on mazes and their twins.

Each source maze has a switch-gate and a key-door step (a chain of two), a decoy key, and twins of
every kind the attribution reads. An agent is a function from (variant name or None, maze index,
repeat) to the episode's action progress; progress 1 is a solve. The frames are episode rows only
(``tracefab.episode_row``): what the twins sections read.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tracefab import episode_row

# variant name -> (kind, family)
TWINS = {
    "mirror-tb": ("mirror", "isomorphic"), "rotate-90": ("rotate", "isomorphic"),
    "mirror-lr": ("mirror", "near-isomorphic"), "reskin-neutral": ("reskin", "reskin"),
    "no-switches": ("no-switches", "ablation"), "no-keys": ("no-keys", "ablation"),
    "no-distractors": ("no-distractors", "ablation"), "drop-link-1": ("drop-link", "ablation"),
    "drop-link-2": ("drop-link", "ablation"), "control-none-s0": ("control-none", "control"),
}
MAZES = 12
REPEATS = 2

Agent = Callable[[str | None, int, int, np.random.Generator], float]


def _stuck(maze: int) -> float:
    """The progress of an episode that stopped at the mechanism it could not get past: where that
    mechanism stands on the maze's path, the same in every orientation of the maze."""
    return 0.2 + 0.05 * (maze % 7)


def never_toggles(variant, maze, repeat, rng) -> float:
    """Never operates a switch: blocked wherever a switch-gate stands (drop-link-2 drops that step)."""
    return 1.0 if variant in ("no-switches", "drop-link-2", "control-none-s0") else _stuck(maze)


def colour_blind(variant, maze, repeat, rng) -> float:
    """Takes the decoy key and cannot undo it: blocked wherever the door and the decoy both stand
    (drop-link-1 drops the key-door step)."""
    return 1.0 if variant in ("no-distractors", "no-keys", "drop-link-1", "control-none-s0") else _stuck(maze)


def mirror_blind(variant, maze, repeat, rng) -> float:
    """Solves every maze, but loses its way in a mirrored one."""
    return _stuck(maze) if variant in ("mirror-tb", "mirror-lr") else 1.0


def clumsy(variant, maze, repeat, rng) -> float:
    """Gets the wrong actions everywhere, the control too, at random."""
    return float(np.clip(0.25 + 0.05 * (maze % 3) + rng.normal(0, 0.05), 0, 0.9))


AGENTS: dict[str, Agent] = {"never-toggle": never_toggles, "colour-blind": colour_blind,
                            "mirror-blind": mirror_blind, "clumsy": clumsy}


def episodes(agents: dict[str, Agent] = AGENTS, twins=TWINS, mazes: int = MAZES, repeats: int = REPEATS,
             seed: int = 0, run: str = "twins") -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for name, agent in agents.items():
        for m in range(mazes):
            source = f"m{m}"
            for variant in (None, *twins):
                kind, family = twins[variant] if variant else (None, None)
                maze_id = f"{source}.{variant}" if variant else source
                for r in range(repeats):
                    progress = agent(variant, m, r, rng)
                    rows.append(episode_row(
                        run=run, model_name=name, maze_id=maze_id, maze_checksum=f"sum-{maze_id}", repeat=r,
                        variant=variant, variant_kind=kind, variant_family=family,
                        twin_of=source if variant else None, twin_of_checksum=f"sum-{source}" if variant else None,
                        solved=progress == 1.0, progress_action=progress,
                        termination="solved" if progress == 1.0 else "stall", n_keys=2, n_doors=1, n_switches=1,
                        n_gates=1, n_distractors=1, chain_length=2))
    return rows
