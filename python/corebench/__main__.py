"""The `corebench` program (and `python -m corebench`): the command line's
`main`, started and ended for a process of its own."""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn


def console() -> NoReturn:
    """Runs `main`, then exits with its status.

    What a command imports (typer, the pydantic models, the command's own
    modules) is some 50,000 objects kept for the life of the process, which
    the collector would scan again and again as they are made: about 20
    collections and 40 ms of CPU in every `corebench load` on a 2-core VM,
    counted in its CPU per request (bench/generator-cost.sh). So the
    collector is paused while they are imported, and what they made is
    frozen (`gc.freeze`: later collections, in the command's run, skip it).
    The package itself imports none of it (corebench/__init__.py), so the
    pause covers them all.

    The exit skips the interpreter's teardown, which frees every object of
    every module one by one (pydantic's validators, typer's commands): about
    90 ms of CPU more. Nothing is left to that teardown: each command closes
    what it opened (stores, servers, files, a Ray session) before `main`
    returns, registers no exit handler, and leaves no thread that needs to
    finish (the few left, like a timed-out Ray connect, are daemons, which an
    ordinary exit would kill too)."""
    start(sys.argv[1:])
    from corebench import cli

    code = cli.main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        # A reader that went away (`| head`): CPython's own exit says 120.
        code = code or 120
    os._exit(code)


def start(argv: list[str]) -> None:
    """Imports the command line and the modules of the command in `argv`
    with the collector paused, then freezes what they made and resumes it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        from corebench import cli

        cli.register(argv)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


if __name__ == "__main__":
    console()
