"""The command line: parse → validate → run → store → report. Each command
is a thin layer over the Python API; user errors are one line and exit 2."""

from __future__ import annotations

import importlib
import sys

import typer

from corebench.errors import UsageError

app = typer.Typer(
    name="corebench",
    help="How does my web server scale, and what should I run it on?",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        import platform

        from corebench import __version__, _engine

        print(f"corebench {__version__} (Python {platform.python_version()}, {platform.system()} {platform.machine()})")
        why = _engine.io_uring_unavailable()
        io = "io_uring (the default) and epoll" if why is None else f"epoll (io_uring unavailable: {why})"
        print(f"Load I/O: {io}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit (ab -V)."
    ),
) -> None:
    """How does my web server scale, and what should I run it on?"""


# Which module defines each command, in the order help lists them
# (tests/cli/test_commands.py checks it against what the modules register).
COMMANDS = {
    "capacity": "capacity",
    "cleanup": "cleanup",
    "fit": "fit",
    "load": "load",
    "replay": "replay",
    "report": "report",
    "export": "report",
    "compare": "report",
    "run": "run",
    "sweep": "run",
    "serve": "serve",
    "system": "system",
}
MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def register(argv: list[str] | None = None) -> None:
    """Imports the module of the command named in `argv`, or every module
    (for help, or a name to correct). Importing all costs about 25 ms of a
    `corebench load`'s start, counted in its CPU per request (bench/)."""
    named = next((a for a in argv or [] if not a.startswith("-")), None)
    for module in [COMMANDS[named]] if named in COMMANDS else MODULES:
        importlib.import_module(f"corebench.cli.{module}")


def fail(message: str, code: int = 2) -> typer.Exit:
    print(f"corebench: error: {one_line(message)}", file=sys.stderr)
    return typer.Exit(code)


def one_line(message: str) -> str:
    """A user error is one line: a control character the user gave (a CR
    or LF in a factor level, an escape) is shown escaped, never acted on by
    the terminal or split into lines."""
    return "".join(repr(ch)[1:-1] if ch < " " or ch == "\x7f" else ch for ch in message)


def main(argv: list[str] | None = None) -> int:
    register(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="corebench", standalone_mode=False)
    except typer.TyperException as e:
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None:
            print(ctx.get_help())
            return 2
        # The parser's own errors (unknown flag, missing argument, bad type),
        # folded into one line like every other user error.
        # A subcommand's path; the root's is "corebench", already said.
        where = f"{ctx.command_path}: " if ctx is not None and ctx.parent is not None else ""
        print(f"corebench: error: {one_line(where + e.format_message())}", file=sys.stderr)
        return e.exit_code
    except UsageError as e:
        print(f"corebench: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except typer.Abort:
        return 130
    return code if isinstance(code, int) else 0
