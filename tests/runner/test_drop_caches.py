"""`drop_caches = true`: before each measured run the page cache is dropped,
seen on a file this test reads into the cache (fincore, util-linux, counts
its resident pages); without it the file stays cached."""

import os
import subprocess

import pytest

from tests.support.experiments import run_plan

PLAN = """
[experiment]
repetitions = 1
duration = "0.2s"
calibrate = false
drop_caches = {drop}

[target]
builtin = {{ model = "async", workers = 1 }}

[load]
path = "/static/100"
concurrency = 1
"""


def _resident_bytes(path) -> int:
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)], capture_output=True)
    return int(out.stdout.split()[0])


@pytest.mark.skipif(not os.access("/proc/sys/vm/drop_caches", os.W_OK), reason="needs root")
@pytest.mark.parametrize("drop", [True, False])
def test_each_measured_run_starts_with_a_cold_cache(tmp_path, drop):
    cached = tmp_path / "cached.bin"
    cached.write_bytes(os.urandom(4 << 20))
    os.sync()
    cached.read_bytes()
    assert _resident_bytes(cached) == 4 << 20
    ran = run_plan(tmp_path, PLAN.format(drop=str(drop).lower()))
    assert ran.out.ok == 1
    assert (_resident_bytes(cached) == 0) is drop
