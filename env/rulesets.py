"""The rulesets a maze can be played under (docs/maze-format.md#rulesets): gridbench's own, the
MultiNet study's R1 rulebook, and the later harness's that adds its tiles. Declared here, apart
from ``env.maze``, so that the mechanics (``env.mechanics``), which ``env.maze`` reads, can name
them too."""

from __future__ import annotations

from typing import Literal, get_args

Ruleset = Literal["minigrid", "multinet-r1", "multinet-pr57"]
RULESETS: tuple[str, ...] = get_args(Ruleset)
MINIGRID, MULTINET_R1, MULTINET_PR57 = RULESETS
# the study's rulebooks: R1, and the later harness's (its "PR #57" tiles) that adds tiles of its own
STUDY_RULESETS = (MULTINET_R1, MULTINET_PR57)
