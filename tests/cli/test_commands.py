"""The CLI imports only the module of the command it runs: its table of
commands must name every command the modules register, and only those."""

import typer.main

from corebench.cli import COMMANDS, MODULES, _register, app


def test_the_table_names_each_command_and_its_module() -> None:
    _register()
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert set(commands) == set(COMMANDS)
    for name, command in commands.items():
        module = command.callback.__module__
        assert module == f"corebench.cli.{COMMANDS[name]}", (name, module)
    assert MODULES == ("capacity", "cleanup", "fit", "load", "replay", "report", "run", "serve")


def test_a_command_alone_imports_its_module_only() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from corebench.cli import _register; _register(['load', '-n', '1']); "
        "print(sorted(m for m in sys.modules if m.startswith('corebench.cli.') and m[14:] in "
        f"{list(MODULES)!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['corebench.cli.load']"


def test_a_misspelled_command_is_one_line_naming_the_one_meant(capsys) -> None:
    from corebench.cli import main

    assert main(["lod", "http://127.0.0.1:1/"]) == 2
    assert capsys.readouterr().err == "corebench: error: No such command 'lod'. Did you mean 'load'?\n"
