"""``gridbench --help`` and each command's help: a paragraph reads as one, whatever the width.
The docstrings are wrapped for the source; the help renderer used to keep those breaks and wrap
again around them, breaking lines mid-sentence."""

import os
import subprocess
import sys

import typer

from app.cli import app


def commands(group, path: tuple[str, ...] = ()):
    """Every command under ``group`` (typer's click, which may be its own copy of click)."""
    for name, command in group.commands.items():
        yield (*path, name), command
        if hasattr(command, "commands"):
            yield from commands(command, (*path, name))


def test_every_help_paragraph_is_one_line():
    root = typer.main.get_command(app)
    seen = list(commands(root))
    assert len(seen) >= 15  # every command and group, subcommands included
    for path, command in seen:
        help_text = command.help or ""
        assert help_text, f"gridbench {' '.join(path)} has no help"
        assert "\n" not in help_text.replace("\n\n", ""), f"gridbench {' '.join(path)}: {help_text!r}"


def test_the_command_list_shows_each_summary_on_its_own_lines():
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    out = subprocess.run([sys.executable, "-m", "app.cli", "--help"], capture_output=True, text=True, env=env,
                         check=True).stdout
    variants = next(line for line in out.splitlines() if "variants " in line)
    # at 200 columns the whole first sentence fits on the command's line
    assert "recorded with what changed and the maze it is the twin of" in variants
