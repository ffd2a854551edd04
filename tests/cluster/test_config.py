"""What is checked before any cluster is contacted."""

import sys

import pytest
from pydantic import ValidationError

from corebench.cluster import ClusterConfig, ClusterError
from corebench.cluster import session as session_mod
from corebench.errors import UsageError


def test_cluster_settings_are_validated():
    assert ClusterConfig(address="auto").agents == 2
    for bad in (
        {"address": ""},
        {"address": "auto", "agents": 0},
        {"address": "auto", "agent_cpus": 0},
        {"address": "auto", "nodes": 2},
    ):
        with pytest.raises(ValidationError):
            ClusterConfig(**bad)


@pytest.mark.parametrize("address", ["localhost", "10.0.0.1:port", "ray://nowhere"])
def test_an_address_that_is_not_host_and_port_is_refused(address):
    with pytest.raises(ClusterError, match="HOST:PORT"):
        session_mod._probe(address)


def test_without_ray_installed_the_error_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'corebench\[ray\]'"):
        session_mod.Session(ClusterConfig(address="auto"))


def test_a_loopback_target_is_refused_when_an_agent_is_on_another_machine():
    s = session_mod.Session.__new__(session_mod.Session)  # its state alone: no cluster needed
    s.driver_ip = "10.0.0.1"
    here = session_mod._Agent(None, 0, {"node_ip": "10.0.0.1", "hostname": "a", "node_id": "a" * 16})
    away = session_mod._Agent(None, 1, {"node_ip": "10.0.0.2", "hostname": "b", "node_id": "b" * 16})
    s.agents = [here, away]
    with pytest.raises(UsageError, match="agent 1 runs on 10.0.0.2 .* its own loopback"):
        s._check_reach("http://127.0.0.1:8080/")
    s._check_reach("http://10.0.0.9:8080/")
    assert s.agents_here
    s.agents = [here]
    s._check_reach("http://127.0.0.1:8080/")
