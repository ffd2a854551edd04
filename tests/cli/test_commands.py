"""The CLI imports only the module of the command it runs: its table of
commands must name every command the modules register, and only those."""

import typer.main

from corebench.cli import COMMANDS, MODULES, app, register


def test_the_table_names_each_command_and_its_module() -> None:
    register()
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert set(commands) == set(COMMANDS)
    for name, command in commands.items():
        module = command.callback.__module__
        assert module == f"corebench.cli.{COMMANDS[name]}", (name, module)
    assert MODULES == ("capacity", "cleanup", "fit", "load", "replay", "report", "run", "serve", "system")


def test_a_command_alone_imports_its_module_only() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from corebench.cli import register; register(['load', '-n', '1']); "
        "print(sorted(m for m in sys.modules if m.startswith('corebench.cli.') and m[14:] in "
        f"{list(MODULES)!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['corebench.cli.load']"


def test_a_misspelled_command_is_one_line_naming_the_one_meant(capsys) -> None:
    from corebench.cli import main

    assert main(["lod", "http://127.0.0.1:1/"]) == 2
    assert capsys.readouterr().err == "corebench: error: No such command 'lod'. Did you mean 'load'?\n"


def _buffered() -> dict[str, str]:
    """The environment with stdout block-buffered into a pipe, as a user's
    shell has it (this machine's sets PYTHONUNBUFFERED)."""
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _program(*argv: str, **kw):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "corebench", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=_buffered(), **kw)


def test_the_program_exits_with_the_commands_status_and_its_whole_report() -> None:
    # The program ends without the interpreter's teardown (cli.console): the
    # report, block-buffered into a pipe, must still all reach it.
    p = _program("load", "-n", "1", "http://127.0.0.1:1/", timeout=60)
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("corebench: no request succeeded: 1 sent; connect: 1\n"), p.stdout
    assert "Failed requests:        1" in p.stdout
    assert p.stdout.rstrip().splitlines()[-1].startswith("Error sample:"), p.stdout


def test_a_reader_that_went_away_is_exit_status_120_as_in_python() -> None:
    import subprocess
    import sys

    p = subprocess.Popen(
        [sys.executable, "-m", "corebench", "--version"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_buffered(),
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # before the program writes: its one flush finds no reader
    err = p.stderr.read()
    assert p.wait(timeout=60) == 120, err


def test_importing_the_package_leaves_the_collector_as_it_was() -> None:
    import subprocess
    import sys

    code = "import gc, sys; gc.disable() if sys.argv[1] == 'off' else None; import corebench; print(gc.isenabled())"
    for state, expected in (("on", "True"), ("off", "False")):
        out = subprocess.run([sys.executable, "-c", code, state], capture_output=True, text=True, check=True).stdout
        assert out.strip() == expected, state
