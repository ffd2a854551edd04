"""Ray's processes kept off the target's CPUs and moved back
(targets.ray_procs), on this process's own threads standing in for a
node's Ray processes: a thread moved is moved back to its CPUs, and one
started while they were kept gets its process's first thread's CPUs."""

import os
import threading

import psutil
import pytest

from corebench.targets import ray_procs

needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to move threads between")


@needs_two
def test_threads_kept_off_and_those_born_meanwhile_are_moved_back(monkeypatch):
    monkeypatch.setattr(ray_procs, "ray_processes", lambda: [psutil.Process()])
    before = os.sched_getaffinity(0)
    spare = [min(before)]
    got: dict[str, set[int]] = {}
    started, go, done = threading.Event(), threading.Event(), threading.Event()

    def born_meanwhile() -> None:
        got["tid"] = {threading.get_native_id()}
        started.set()
        go.wait(10)
        got["after"] = os.sched_getaffinity(0)
        done.set()

    try:
        kept = ray_procs.keep_off(spare)
        assert kept is not None and os.sched_getaffinity(0) == set(spare), "this thread moved"
        t = threading.Thread(target=born_meanwhile)
        t.start()  # inherits the kept CPUs
        assert started.wait(10)
        (tid,) = got["tid"]
        assert os.sched_getaffinity(tid) == set(spare)
        kept.restore()
        go.set()
        done.wait(10)
        t.join(10)
        assert os.sched_getaffinity(0) == before, "the thread that was moved is back"
        assert got["after"] == before, "the thread born meanwhile got its process's CPUs"
    finally:
        os.sched_setaffinity(0, before)


def test_nothing_to_spare_moves_nothing(monkeypatch):
    monkeypatch.setattr(ray_procs, "ray_processes", lambda: [psutil.Process()])
    before = os.sched_getaffinity(0)
    assert ray_procs.keep_off([]) is None and os.sched_getaffinity(0) == before


def test_outside_ray_there_are_no_ray_processes():
    assert ray_procs.ray_processes() == []
    spent = ray_procs.Spent()
    spent.begin()
    assert spent.cores() is None
