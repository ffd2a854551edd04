"""The monitor stage: every core, the target's process tree and each
service's, the generator, the disks, sampled every INTERVAL_S during a run
(`sampler.py`), and measured apart by cgroups where the kernel lets us
(`cgroups.py`)."""

from corebench.monitor.protocol import RunMonitor
from corebench.monitor.sampler import INTERVAL_S, STEAL_NOTABLE_CORES, Disk, Monitor, Sample, Tree, disk

__all__ = ["INTERVAL_S", "STEAL_NOTABLE_CORES", "Disk", "Monitor", "RunMonitor", "Sample", "Tree", "disk"]
