import subprocess
import sys

import pytest

from corebench.target.nginx import Nginx

CLI = [sys.executable, "-m", "corebench"]


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def nginx():
    with Nginx() as n:
        yield n
