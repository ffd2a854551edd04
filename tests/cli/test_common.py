"""Output files (cli.common.write): written whole or not at all. A full
disk leaves the old file as it was and no part of the new one, and exits 1
(the machine's trouble), not 2 (bad input); devices are written, never
renamed over."""

import os
import subprocess

import pytest
import typer

from corebench.cli.common import write
from corebench.errors import UsageError


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")
def test_a_full_disk_keeps_the_old_file_and_exits_1(tmp_path, capsys):
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        old = full / "report.json"
        old.write_text("the old report\n")
        with pytest.raises(typer.Exit) as ended:
            write(str(old), "x" * 1_000_000, "--json")
        assert ended.value.exit_code == 1
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"corebench: error: --json {old}: cannot write (No space left on device)"), line
        assert old.read_text() == "the old report\n" and sorted(p.name for p in full.iterdir()) == ["report.json"]
    finally:
        subprocess.run(["umount", str(full)], check=False)


def test_a_file_is_replaced_whole_and_a_device_written_in_place(tmp_path):
    out = tmp_path / "r.md"
    out.write_text("old")
    write(str(out), "new\n", "-o")
    assert out.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]
    write("/dev/null", "ignored\n", "-o")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    with pytest.raises(UsageError, match="-o /nonexistent/folder/r.md: cannot write"):
        write("/nonexistent/folder/r.md", "x", "-o")
