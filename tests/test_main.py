"""The `corebench` program's start: the package imports no models, and the
program imports its command with the collector paused, then freezes what it
made and resumes the collector (each in a process of its own: a freeze is
for the life of the process)."""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_package_imports_its_models_when_asked() -> None:
    out = _run(
        "import sys, corebench\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'typer', 'corebench.config', "
        "'corebench.result'))))\n"
        "print(corebench.LoadResult.__module__, corebench.LoadSettings.__module__, corebench.LoadConfig.__name__)\n"
        "try:\n    corebench.nothing\nexcept AttributeError as e:\n    print(e)"
    )
    assert out.splitlines() == [
        "[]",
        "corebench.result.models corebench.config.settings LoadConfig",
        "module 'corebench' has no attribute 'nothing'",
    ]


def test_the_program_freezes_what_its_command_imported_and_collects_after() -> None:
    out = _run(
        "import gc, sys\n"
        "from corebench.__main__ import start\n"
        "start(['load', '-n', '1'])\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 20000, 'corebench.cli.load' in sys.modules, "
        "'corebench.cli.run' in sys.modules)\n"
        "gc.disable()\n"
        "start(['load'])\n"
        "print(gc.isenabled())"
    )
    # The collector runs again after the start, and stays off where the
    # process had turned it off; only the command's module was imported.
    assert out.splitlines() == ["True True True False", "False"]


def test_python_dash_m_runs_the_program() -> None:
    p = subprocess.run([sys.executable, "-m", "corebench", "--version"], capture_output=True, text=True, check=True)
    assert p.stdout.startswith("corebench ") and "Load I/O:" in p.stdout
