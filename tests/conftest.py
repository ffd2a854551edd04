import subprocess
import sys
from pathlib import Path

import pytest

from corebench.testing import Nginx

CLI = [sys.executable, "-m", "corebench"]
ROOT = Path(__file__).resolve().parents[1]
# The real access log the examples replay (10,000 Combined Log Format lines).
ACCESS_LOG = ROOT / "examples" / "data" / "apache-combined-10k.log"
# Published scaling measurements with their known fits.
SCALING_DATA = ROOT / "tests" / "data" / "scaling"


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def nginx():
    with Nginx(http2=True, tls=True) as n:
        yield n


@pytest.fixture
def layout():
    """No CPU limit, as the runner gives a target without `cpus`; its measuring
    cgroups are removed afterwards."""
    from corebench.targets.cpus import CpuControl

    made = CpuControl().layout(None, {"db": None, "files": None})
    yield made
    CpuControl.release(made)
