"""Everything about a plan that can be checked before the first run, in one
place and done once: CPU counts against this machine, recipes' settings,
each point's load settings as the engine would refuse them, and who may send
load where. A plan that passes gets its runs in order; one that fails gets one
line naming the plan's file, line and key."""

from __future__ import annotations

import ipaddress
import math
import os
from dataclasses import dataclass, field

from corebench import engine
from corebench.config.settings import LoadConfig, SettingError
from corebench.errors import UsageError
from corebench.plan import ExperimentPlan, Point
from corebench.plan.experiment import run_config
from corebench.plan.source import where
from corebench.runner import baseline, schedule
from corebench.system.check import DROP_CACHES
from corebench.targets import filesystem, recipes
from corebench.targets.cpus import check as check_cpus
from corebench.targets.cpus import control_method, online_cpus, topology


@dataclass(frozen=True)
class Checked:
    """A plan that passed every check, and its runs in their order."""

    exp: ExperimentPlan
    runs: list[schedule.Run]
    # What the user should know before the first run, one line each.
    notes: list[str] = field(default_factory=list)


def check(exp: ExperimentPlan) -> Checked:
    online = online_cpus()
    logs_read: set[str] = set()
    for p in exp.points:
        _check_cpus(exp, p, online)
        if p.target.recipe:
            try:
                recipes.settings(p.target)
            except recipes.RecipeError as e:
                raise UsageError(f"{_at(exp, 'target', 'settings')}: {e} (at {p.label()})") from None
        try:
            cfg = run_config(exp.plan, p.load, p.target.url or "http://127.0.0.1:1/", exp.path.parent)
            engine.check(_log_read_once(cfg, logs_read), local=exp.plan.cluster is None)
        except SettingError as e:
            raise UsageError(f"{_at(exp, 'load', e.key)}: {e} (at {p.label()})") from None
        _check_reach(exp, p, cfg)
        if p.target.filesystem is not None and (why := filesystem.missing(p.target.filesystem)):
            raise UsageError(f"{_at(exp, 'target', 'filesystem')}: {why} (at {p.label()})")
    if exp.plan.baseline is not None and (why := baseline.missing()):
        raise UsageError(f"{_at(exp, 'baseline', 'hackbench')}: {why}")
    if exp.plan.experiment.drop_caches and not os.access(DROP_CACHES, os.W_OK):
        raise UsageError(
            f"{_at(exp, 'experiment', 'drop_caches')}: dropping the page cache needs root "
            f"({DROP_CACHES} is not writable): run corebench as root, or remove drop_caches"
        )
    return Checked(exp, schedule.runs(exp), _too_few_cores(exp, online) + _siblings(exp, online))


def _log_read_once(cfg: LoadConfig, read: set[str]) -> LoadConfig:
    """The engine's check reads a replayed log as the run would, whole for a
    timed replay: the first point with a given log (and way of reading it)
    is checked so; the others check their own settings on the log's first
    request, as a log of millions of lines is otherwise read once per point."""
    if cfg.replay is None:
        return cfg
    key = f"{cfg.replay.model_dump_json()} {cfg.requests}"
    if key not in read:
        read.add(key)
        return cfg
    return cfg.model_copy(update={"replay": cfg.replay.model_copy(update={"limit": 1})})


def _here(exp: ExperimentPlan) -> list[float]:
    """The cpus levels of targets started on this machine (not on a Ray node)."""
    return [
        p.target.cpus for p in exp.points if p.target.cpus is not None and p.target.url is None and not p.target.node
    ]


def _too_few_cores(exp: ExperimentPlan, online: list[int]) -> list[str]:
    """A level that leaves the generator no core of its own, said up front."""
    levels = _here(exp)
    if exp.plan.cluster is not None or not levels or math.ceil(max(levels)) < len(online):
        return []
    top = max(levels)
    return [
        f"this machine has {len(online)} CPUs: at cpus = {top:g} the target takes all of them and the load "
        f"generator shares its cores, so those runs are lower bounds; a machine with {math.ceil(top) + 1} or more "
        "CPUs keeps one for the generator (or send the load from a [cluster] of agents)"
    ]


def _siblings(exp: ExperimentPlan, online: list[int]) -> list[str]:
    """A level of more CPUs than physical cores (smt = "off" takes one thread
    per core, then siblings), said up front: its CPUs are not cores."""
    levels = _here(exp)
    topo = topology(online) if levels else None
    if topo is None or math.ceil(max(levels)) <= len(topo.cores):
        return []
    top = max(levels)
    return [
        f"cpus = {top:g} is more than this machine's {len(topo.cores)} physical cores ({len(topo.cpus)} CPUs): "
        "beyond them the target gets SMT siblings, which give less than a core each, so its speedup there is not "
        "per core (corebench system shows which CPUs each level gets)"
    ]


def _at(exp: ExperimentPlan, *key: str) -> str:
    return where(exp.path, exp.text, key)


def _check_cpus(exp: ExperimentPlan, p: Point, online: list[int]) -> None:
    own = {n: s.cpus for n, s in p.target.services.items() if s.cpus is not None}
    t = p.target
    try:
        check_cpus(t.cpus, online, own, t.smt, t.numa, topology(online) if (t.smt, t.numa) != ("off", "one") else None)
    except ValueError as e:
        raise UsageError(f"{_at(exp, 'target', 'cpus')}: {e}") from None
    if p.target.cpus is not None and p.target.cpus != int(p.target.cpus) and control_method() == "affinity":
        raise UsageError(
            f"{_at(exp, 'target', 'cpus')}: cpus = {p.target.cpus:g} needs a CPU quota, "
            "and this machine's cgroups cannot be written (run as root, or give whole cpus)"
        )


def _check_reach(exp: ExperimentPlan, p: Point, cfg: LoadConfig) -> None:
    """Who sends the load where: a target beyond loopback needs allow_remote,
    and a cluster's agents must be able to share the point's load."""
    if not ipaddress.ip_address(p.target.address).is_loopback and not p.load.allow_remote:
        raise UsageError(
            f"{_at(exp, 'target', 'address')}: the target listens on "
            f"{p.target.address}, not a loopback address: set allow_remote = true in [load] "
            "to send it load"
        )
    if exp.plan.cluster is not None:
        from corebench.cluster.session import check as check_share

        try:
            check_share(cfg, exp.plan.cluster)
        except UsageError as e:
            raise UsageError(f"{_at(exp, 'cluster', 'agents')}: {e} (at {p.label()})") from None
