"""The ``gridbench`` command line: the one face over every package."""

from __future__ import annotations

import importlib
import inspect
import sys
import types

import click
import typer

from env.errors import BadInput

_typer_click: types.ModuleType
try:  # typer >= 0.29 parses with its own copy of click, whose errors are not click's
    from typer._click import exceptions as _typer_click
except ImportError:  # older typer uses click itself
    _typer_click = click.exceptions
USAGE_ERRORS = (click.exceptions.UsageError, _typer_click.UsageError)
CLICK_ERRORS = (click.exceptions.ClickException, _typer_click.ClickException)
ABORTS = (click.exceptions.Abort, typer.Abort, getattr(_typer_click, "Abort", click.exceptions.Abort))

COMMAND_MODULES = (
    "app.commands.maze",
    "app.commands.pool",
    "app.commands.variants",
    "app.commands.run",
    "app.commands.calibrate",
    "app.commands.compact",
    "app.commands.export",
    "app.commands.replay",
    "app.commands.report",
    "app.commands.board",
    "app.commands.plan",
    "app.commands.view",
    "app.commands.play",
)

app = typer.Typer(
    name="gridbench",
    help="Long-horizon action evaluation of vision-language models in Minigrid mazes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def reflowed(text: str | None) -> str | None:
    """A docstring's paragraphs, each joined onto one line: the help renderer keeps a docstring's
    line breaks, which were written for the source, and wraps again around them, breaking lines
    mid-sentence."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _reflow_help(typer_app: typer.Typer) -> None:
    """Every command's and group's help as paragraphs of one line each (see ``reflowed``)."""
    for command in typer_app.registered_commands:
        command.help = reflowed(command.help or (command.callback.__doc__ if command.callback else None))
    for group in typer_app.registered_groups:
        if isinstance(group.help, str):
            group.help = reflowed(group.help)
        if group.typer_instance is not None:
            info = group.typer_instance.info
            if isinstance(info.help, str):
                info.help = reflowed(info.help)
            _reflow_help(group.typer_instance)


_reflow_help(app)


def fail(message: str, code: int = 2) -> None:
    """Print one line to stderr and exit; for bad input the code is 2."""
    print(f"gridbench: {message}", file=sys.stderr)
    raise SystemExit(code)


def main(argv: list[str] | None = None) -> None:
    try:
        # without standalone mode click returns a command's typer.Exit code instead of exiting
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            raise SystemExit(code)
    except BadInput as e:
        fail(str(e))
    except ABORTS:
        fail("aborted", 130)
    except USAGE_ERRORS as e:
        fail(e.format_message().splitlines()[0] if e.format_message() else "bad usage")
    except CLICK_ERRORS as e:
        fail(e.format_message(), e.exit_code)
    except click.exceptions.Exit as e:
        raise SystemExit(e.exit_code) from None
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except OSError as e:
        # a disk that fills up or turns read-only mid-run: one line; every file written before stays whole
        fail(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e), 1)


if __name__ == "__main__":
    main()
