"""The store says why it cannot be opened where it cannot: SQLite says
"unable to open database file" for a missing folder and a folder alike,
and corebench said "not a corebench store" for both (issue 41, item 10)."""

import os
from pathlib import Path

import pytest

from corebench.store import Store, StoreError
from tests.conftest import run_cli


def test_a_missing_folder_or_a_folder_is_named_as_such(tmp_path):
    with pytest.raises(StoreError, match=r"no such folder .*missing; create it"):
        Store(tmp_path / "missing" / "s.sqlite")
    with pytest.raises(StoreError, match="not a file"):
        Store(tmp_path)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not sqlite")
    with pytest.raises(StoreError, match="not a corebench store"):
        Store(garbage)


def test_the_run_command_says_it_in_one_line(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[experiment]\nrequests = 1\n[target]\nurl = "http://127.0.0.1:9/"\n')
    p = run_cli("run", str(plan), "--store", str(tmp_path / "missing" / "s.sqlite"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no such folder" in p.stderr, p.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to nobody")
def test_a_store_in_a_folder_the_reader_cannot_write_is_still_read(tmp_path):
    """SQLite would make the WAL's -shm file beside it: in a read-only
    folder the store is opened immutable, unless its log holds runs."""
    import shutil
    import subprocess
    import sys
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="corebench-test-ro-"))
    try:
        s = Store(folder / "s.sqlite")
        s.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        s.close()
        os.chmod(folder, 0o555)
        os.chmod(folder / "s.sqlite", 0o644)
        read = "from pathlib import Path; from corebench.store import Store; Store(Path(%r), read_only=True).close()"
        p = subprocess.run(
            [sys.executable, "-c", read % str(folder / "s.sqlite")],
            user=65534,
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": str(folder)},
            check=False,
        )
        assert p.returncode == 0, p.stderr
        assert sorted(x.name for x in folder.iterdir()) == ["s.sqlite"], "nothing written beside it"
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)
