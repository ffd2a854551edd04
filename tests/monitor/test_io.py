"""The target's CPU split into user and system time, its storage I/O, and a
block device's I/O: on a synthetic /proc/diskstats, and measured on a real
loop-mounted image while a child process writes to it."""

import os
import subprocess
import sys
import time

import pytest

from corebench.monitor import INTERVAL_S, Monitor, disk
from corebench.plan.model import Filesystem
from corebench.targets import filesystem

STATS = """   7       0 loop0 983 12 5758 54 582 270 79632 196 0 196 387 0 0 0 0 310 136
   7       1 loop1 10 0 80 1 20 0 160 3 0 50 4 0 0 0 0 0 0
   8       0 sda 1 0 8 0 1 0 8 0 0 1 0 0 0 0 0 0 0
"""


def test_diskstats_fields_are_sectors_and_busy_milliseconds(tmp_path):
    f = tmp_path / "diskstats"
    f.write_text(STATS)
    d = disk(["loop0", "loop1"], str(f))
    assert d.read_bytes == (5758 + 80) * 512 and d.write_bytes == (79632 + 160) * 512 and d.busy_ms == 196 + 50
    assert disk([], str(f)).write_bytes == 0 and disk(["sdz"], str(f)).busy_ms == 0


def test_a_spinning_process_is_user_time():
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 3: pass"])
    try:
        with Monitor(spin.pid, 1) as m:
            time.sleep(1.0)
    finally:
        spin.kill()
        spin.wait()
    s = m.summary()
    assert s.target_cpu == pytest.approx(s.target_user_cpu + s.target_system_cpu)
    assert s.target_cpu > 0.3 and s.target_system_share < 0.3, s


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")
def test_writes_to_the_image_are_seen_on_its_device_and_in_the_writer(tmp_path):
    m = filesystem.mount(Filesystem(type="ext4", size="256MB"), tmp_path / "fs")
    try:
        dev = os.path.basename(m.facts["device"])
        writer = subprocess.Popen(
            ["sh", "-c", f"sleep 0.3; dd if=/dev/zero of={m.at}/f bs=1M count=16 oflag=direct status=none; sleep 0.3"]
        )
        with Monitor(writer.pid, 1, [dev]) as mon:
            writer.wait(timeout=60)
        s = mon.summary()
        seconds = s.samples * INTERVAL_S  # the tail sample is shorter: an upper bound
        assert s.disk_devices == [dev]
        assert s.disk_write_bps * seconds >= 0.8 * 16 * 2**20, s
        assert s.target_write_bps * seconds >= 0.8 * 16 * 2**20, s
        # Busy time is the device's own io_ticks: a loop device may not count
        # it (seen 0 on one machine, 0.1 on another), so only its range is sure.
        assert 0 <= s.disk_busy <= 1.0 + 1e-9
    finally:
        filesystem.unmount(m)
