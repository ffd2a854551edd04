"""Inputs held in memory are read bounded (corebench.files): an endless
device or a huge file is refused in one line, never slurped."""

import pytest

from corebench import files
from tests.conftest import run_cli


def test_a_file_past_its_limit_is_refused_and_one_within_it_read_exactly(tmp_path):
    f = tmp_path / "body.bin"
    f.write_bytes(b"\x00\xff" * 8)
    assert files.read_bytes(f, 16) == b"\x00\xff" * 8
    with pytest.raises(files.TooLarge, match="more than 0 MiB"):
        files.read_bytes(f, 15)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["load", "http://127.0.0.1:9/", "-p", "/dev/zero", "-n", "1"], "-p /dev/zero: more than 64 MiB"),
        (["load", "--urls", "/dev/zero", "-n", "1"], "/dev/zero: the URL file is more than 64 MiB"),
        (["fit", "/dev/zero"], "/dev/zero: the table is more than 16 MiB"),
        (["run", "/dev/zero", "--dry-run"], "/dev/zero: the plan is more than 4 MiB"),
    ],
)
def test_an_endless_input_is_one_line_and_exit_2(args, says):
    p = run_cli(*args)
    assert p.returncode == 2 and p.stdout == "", p.stdout
    (line,) = p.stderr.splitlines()
    assert line.startswith(f"corebench: error: {says}"), line
