"""A lab of several hosts on one machine, to rehearse a lab plan before
renting machines and to test one: a Ray head on this machine and Ray nodes
each in a network namespace of its own (own address, joined to this
machine by a veth pair). Everything it makes (namespaces, veth pairs, Ray
processes) it removes on leaving, also after an error. Needs root and
`ip` (iproute2).

    with Lab(nodes={"target": 0, "load": 1}) as lab:
        lab.address          # the head's HOST:PORT, for ray = / [cluster] address
        lab.ip["target"]     # a node's address, for [target] node

A node given 0 CPUs offers Ray none, so no load agent is placed there: the
target's node in a lab plan. The namespaces share this machine's CPUs, its
/proc and its cgroups: a lab tests how a plan is run across hosts, not
how fast it runs there."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType, TracebackType
from typing import IO

# Ray's node processes take this long to join on a busy 2-core machine.
JOIN_TIMEOUT_S = 90.0
RAY = str(Path(sys.executable).with_name("ray"))


def _free_tag() -> int:
    """A number no other lab on this machine uses now (its bridge's name is
    free), starting from this process's: two labs at once do not collide."""
    for i in range(200):
        tag = 20 + (os.getpid() + i) % 200
        if subprocess.run(["ip", "link", "show", f"cb{tag}br"], capture_output=True, timeout=30).returncode != 0:
            return tag
    raise RuntimeError("no free lab number: 200 labs on this machine (corebench cleanup does not remove them)")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


class Lab:
    """A Ray head here (`head_cpus`) and one namespaced node per entry of
    `nodes` (name: CPUs it offers Ray)."""

    def __init__(self, nodes: dict[str, int], head_cpus: int = 1, pinned: dict[str, list[int]] | None = None) -> None:
        self.nodes, self.head_cpus = nodes, head_cpus
        # A node's processes (its raylet, and the agents it starts) held to
        # these CPUs, as a machine of its own would hold them to its own.
        self.pinned = pinned or {}
        tag = _free_tag()
        self.prefix = f"cb{tag}"
        self.here = f"10.232.{tag}.1"
        self.ip = {name: f"10.232.{tag}.{i + 2}" for i, name in enumerate(nodes)}
        self.address = ""
        # What this lab made, and removes: never another lab's.
        self._namespaces: list[str] = []
        self._links: list[str] = []
        self._logs: list[IO[bytes]] = []
        self._procs: list[subprocess.Popen[bytes]] = []
        self._head: object | None = None
        self._bridge = f"{self.prefix}br"

    def namespace(self, name: str) -> str:
        return f"{self.prefix}{name[:6]}"

    def __enter__(self) -> Lab:
        try:
            self._network()
            self._ray()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _network(self) -> None:
        # A bridge here holds this machine's address; each namespace's veth
        # pair joins it, so the nodes reach each other and the head.
        _ip("link", "add", self._bridge, "type", "bridge")
        self._links.append(self._bridge)
        _ip("addr", "add", f"{self.here}/24", "dev", self._bridge)
        _ip("link", "set", self._bridge, "up")
        for i, (name, addr) in enumerate(self.ip.items()):
            ns, here_if, there_if = self.namespace(name), f"{self.prefix}h{i}", f"{self.prefix}n{i}"
            _ip("netns", "add", ns)
            self._namespaces.append(ns)
            _ip("link", "add", here_if, "type", "veth", "peer", "name", there_if)
            self._links.append(here_if)
            _ip("link", "set", here_if, "master", self._bridge)
            _ip("link", "set", here_if, "up")
            _ip("link", "set", there_if, "netns", ns)
            for args in (("addr", "add", f"{addr}/24", "dev", there_if), ("link", "set", there_if, "up")):
                _ip("netns", "exec", ns, "ip", *args)
            _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")

    def _ray(self) -> None:
        from ray.cluster_utils import Cluster

        head = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": self.head_cpus, "node_ip_address": self.here},
            connect=False,
        )
        self._head = head
        self.address = head.address
        import ray

        ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
        try:
            # One node at a time: Ray gives a raylet 30 s to register, which
            # two starting at once on a busy 2-core machine can miss; a
            # node whose start gave up is started once more.
            for i, name in enumerate(self.nodes):
                for attempt in range(2):
                    self._start(name)
                    if self._joined(ray, 2 + i, self._procs[-1]):
                        break
                    if attempt == 1:
                        raise RuntimeError(
                            f"the lab's Ray node {name} did not join within {JOIN_TIMEOUT_S:.0f} s; its output "
                            f"ends: {self._tails()}"
                        )
                    # What the failed start left there goes, and then it ends.
                    self._kill_namespace(self.namespace(name))
                    failed = self._procs.pop()
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(failed.pid, signal.SIGKILL)
                    failed.wait(timeout=30)
                    self._wait_gone(ray, 1 + i)
        finally:
            ray.shutdown()

    def _start(self, name: str) -> None:
        cpus = self.pinned.get(name)
        taskset = ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []
        argv = ["ip", "netns", "exec", self.namespace(name), *taskset, RAY, "start", "--address", self.address]
        argv += ["--node-ip-address", self.ip[name], "--num-cpus", str(self.nodes[name])]
        argv += ["--disable-usage-stats", "--block"]
        log = tempfile.TemporaryFile()  # noqa: SIM115 -- the node writes it until close()
        self._logs.append(log)
        self._procs.append(subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True))

    def _wait_gone(self, ray: ModuleType, n: int) -> None:
        """Until at most n nodes count as alive: a killed raylet stays alive
        in Ray's table for a while, and would pass for the next one."""
        end = time.monotonic() + JOIN_TIMEOUT_S
        while len([x for x in ray.nodes() if x["Alive"]]) > n and time.monotonic() < end:
            time.sleep(0.5)

    def _joined(self, ray: ModuleType, n: int, proc: subprocess.Popen[bytes]) -> bool:
        """Whether n nodes are alive before `proc` (the last node's start) gives up."""
        end = time.monotonic() + JOIN_TIMEOUT_S
        while len([x for x in ray.nodes() if x["Alive"]]) < n:
            if proc.poll() is not None or time.monotonic() > end:
                return False
            time.sleep(0.2)
        return True

    def _tails(self) -> str:
        out = []
        for log in self._logs[-1:]:
            log.seek(0)
            text = log.read().decode(errors="replace").strip().splitlines()
            out.append(" | ".join(text[-3:]) or "(nothing)")
        return "; ".join(out)

    def kill(self, name: str) -> None:
        """Kills a node's Ray processes at once, as a lost machine."""
        i = list(self.nodes).index(name)
        proc = self._procs[i]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        # `ray start --block` leaves its raylet and workers in other groups: the namespace's pids go too.
        self._kill_namespace(self.namespace(name))

    def _kill_namespace(self, ns: str) -> None:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30).stdout
        for pid in out.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)

    def close(self) -> None:
        """Removes what this lab made, each part even if another fails."""
        for proc in self._procs:
            if proc.returncode is not None:
                continue  # reaped (kill): its pid may be another process's now
            with contextlib.suppress(ProcessLookupError, OSError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        self._procs = []
        for log in self._logs:
            log.close()
        self._logs = []
        for ns in self._namespaces:
            with contextlib.suppress(Exception):
                self._kill_namespace(ns)
        if self._head is not None:
            with contextlib.suppress(Exception):
                self._head.shutdown()  # type: ignore[attr-defined]
            self._head = None
        for ns in self._namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)  # its veth pair goes with it
        self._namespaces = []
        for link in reversed(self._links):
            # A veth pair whose peer went with its namespace is gone already.
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=30)
        self._links = []
