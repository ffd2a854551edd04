"""`plan.toml` loaded: parse → validate every point → an `ExperimentPlan`
(the validated `Plan`, its factors' levels and every point) the runner
executes; every error names the file, line and key. And what each run of a
point loads: its load section as the engine's `LoadConfig`, through the one
translator the CLI and the Python API use too (`run_config`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import pydantic

from corebench import files
from corebench.config.settings import LoadConfig, engine_config
from corebench.errors import UsageError
from corebench.plan import factors as fx
from corebench.plan.model import SERVICE_VALUES, Experiment, Load, Plan, Target
from corebench.plan.objective import SearchSettings
from corebench.plan.source import where
from corebench.plan.thresholds import parse as parse_threshold

BUILTIN_NAMES = {"port", "dir", "address", "host"}  # filled in per target start, not factors


@dataclass(frozen=True)
class Point:
    levels: dict[str, Any]
    target: Target
    load: Load

    @property
    def key(self) -> str:
        return json.dumps(self.levels, sort_keys=True)

    def target_key(self, target_factors: set[str]) -> str:
        return json.dumps({k: v for k, v in self.levels.items() if k in target_factors}, sort_keys=True)

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.levels.items()) or "(one point)"


@dataclass(frozen=True)
class ExperimentPlan:
    path: Path
    text: str
    plan: Plan
    factors: dict[str, list[fx.Level]]
    points: list[Point]
    # Factors that change the target: a new level restarts it.
    target_factors: set[str]

    overrides: dict[str, Any] = dataclass_field(default_factory=dict)

    @property
    def digest(self) -> str:
        """The plan's identity for --resume: its text and the command line's
        overrides (a 2 s pass is another experiment than the full one)."""
        key = self.text + json.dumps(self.overrides, sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:16]


def _fail(path: Path, text: str, loc: tuple[str | int, ...], msg: str) -> UsageError:
    return UsageError(f"{where(path, text, loc)}: {msg}")


def _pydantic(
    path: Path, text: str, prefix: tuple[str | int, ...], e: pydantic.ValidationError, point: str = ""
) -> UsageError:
    err = e.errors()[0]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key (a typo?)"
    return _fail(path, text, prefix + tuple(err["loc"]), msg + point)


def load_plan(path: Path, overrides: dict[str, Any] | None = None) -> ExperimentPlan:
    try:
        text = files.read_text(path, files.PLAN_BYTES)
    except files.TooLarge as e:
        raise UsageError(f"{path}: the plan is {e}; a plan is a page of TOML") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read the plan ({getattr(e, 'strerror', None) or e})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    return build(path, text, raw, overrides or {})


def build(path: Path, text: str, raw: dict[str, Any], overrides: dict[str, Any]) -> ExperimentPlan:
    if overrides and not isinstance(raw.get("experiment", {}), dict):
        raise _fail(path, text, ("experiment",), "must be a table ([experiment]) for the command line's options")
    for key, value in overrides.items():
        raw.setdefault("experiment", {})[key] = value
    try:
        plan = Plan.model_validate(raw)
    except pydantic.ValidationError as e:
        raise _pydantic(path, text, (), e) from None
    if plan.search is not None:
        _searched(path, text, raw, plan)
    _thresholds(path, text, plan)
    levels = _levels(path, text, plan)
    target_raw = dict(plan.target)
    if "cpus" in levels and "cpus" not in target_raw and "url" not in target_raw:
        target_raw["cpus"] = "{cpus}"  # a cpus factor limits the target unless said otherwise
    known = set(levels) | BUILTIN_NAMES | service_names(target_raw)
    _levels_fill_nothing(path, text, levels, BUILTIN_NAMES | service_names(target_raw))
    # Files are jinja2 templates with the same values; their {{ }} are not placeholders.
    files = target_raw.pop("files", [])
    service_files = _pop_service_files(target_raw)
    paths = {"files": [f.get("path") for f in files if isinstance(f, dict)]} if isinstance(files, list) else {}
    for section, body in (("target", {**target_raw, **paths}), ("load", plan.load)):
        _placeholders_known(path, text, section, body, known, levels)
    target_factors = fx.names_used(target_raw) & set(levels)
    if plan.target.get("restart") == "point":
        target_factors = set(levels)
    target_raw["files"] = files
    points = [_point(path, text, target_raw, service_files, plan.load, lv) for lv in fx.factorial(levels)]
    every_file = files + [f for fs in service_files.values() for f in fs] if isinstance(files, list) else files
    return ExperimentPlan(
        path,
        text,
        plan,
        levels,
        points,
        target_factors | _template_factors(every_file, levels, path.parent),
        dict(overrides),
    )


def _thresholds(path: Path, text: str, plan: Plan) -> None:
    for metric, condition in plan.thresholds.items():
        try:
            parse_threshold(f"{metric}{condition}")
        except ValueError as e:
            raise _fail(path, text, ("thresholds", metric), str(e)) from None


def _levels(path: Path, text: str, plan: Plan) -> dict[str, list[fx.Level]]:
    """Each factor's levels, in the plan's order."""
    levels: dict[str, list[fx.Level]] = {}
    for name, spec in plan.factors.items():
        if name in BUILTIN_NAMES:
            raise _fail(path, text, ("factors", name), f"{name!r} is filled in by corebench; name the factor otherwise")
        try:
            levels[name] = fx.levels(name, spec)
        except ValueError as e:
            raise _fail(path, text, ("factors", name), str(e)) from None
    return levels


def _levels_fill_nothing(path: Path, text: str, levels: dict[str, list[fx.Level]], later: set[str]) -> None:
    """A level is put in as given: one holding {port} (or another value
    corebench fills when the target starts) would be filled again there,
    and the run would not be what the level says."""
    for name, these in levels.items():
        for level in these:
            if isinstance(level, str) and (used := fx.names_used(level) & later):
                held = "{" + sorted(used)[0] + "}"
                raise _fail(
                    path,
                    text,
                    ("factors", name),
                    f"level {level!r} holds {held}, which corebench fills in when the target starts: a level is "
                    "taken as written, so it cannot hold one; put the placeholder in [target] or [load] instead",
                )


def _placeholders_known(
    path: Path, text: str, section: str, body: dict[str, Any], known: set[str], levels: dict[str, list[fx.Level]]
) -> None:
    """Every {placeholder} of a section names a factor or a value corebench fills in."""
    for key, value in body.items():
        unknown = fx.names_used(value) - known
        if unknown:
            name = sorted(unknown)[0]
            raise _fail(
                path, text, (section, key), f"{{{name}}} is not a factor: the factors are {sorted(levels) or 'none'}"
            )


def _searched(path: Path, text: str, raw: dict[str, Any], plan: Plan) -> None:
    """With [search], the search sets each step's rate, arrivals and length."""
    for key in ("duration", "requests"):
        if key in raw.get("experiment", {}):
            raise _fail(
                path, text, ("experiment", key), "with [search], each step's length is the search's: leave it out"
            )
    for key in ("model", "rate", "ramp", "arrivals", "think", "log", "speed"):
        if key in plan.load and not (key == "model" and plan.load[key] == "closed"):
            raise _fail(
                path,
                text,
                ("load", key),
                "with [search] the search sets the rate and arrivals of every step: leave it out",
            )


def service_names(target_raw: dict[str, Any]) -> set[str]:
    """The placeholders the target's services fill in: {db_port}, {db_dir}, ..."""
    services = target_raw.get("services")
    if not isinstance(services, dict):
        return set()
    return {f"{name}_{v}" for name in services for v in SERVICE_VALUES}


def _template_factors(files: list[Any], levels: dict[str, list[fx.Level]], plan_dir: Path) -> set[str]:
    """Factors a configuration file uses change the target too."""
    text = ""
    for f in files if isinstance(files, list) else []:
        if not isinstance(f, dict):
            continue
        text += " ".join(str(v) for v in f.values())
        if isinstance(f.get("template"), str):
            with contextlib.suppress(OSError, UnicodeDecodeError):  # reported when the file is rendered
                text += (plan_dir / f["template"]).read_text()
    return {name for name in levels if re.search(rf"\b{re.escape(name)}\b", text)}


def _pop_service_files(target_raw: dict[str, Any]) -> dict[str, list[Any]]:
    """Each service's files, taken out like the target's (their {{ }} are
    jinja2's); the services are copied, so the plan as given keeps them."""
    services = target_raw.get("services")
    if not isinstance(services, dict):
        return {}
    target_raw["services"] = {n: dict(s) if isinstance(s, dict) else s for n, s in services.items()}
    out = {}
    for name, svc in target_raw["services"].items():
        if isinstance(svc, dict) and isinstance(svc.get("files"), list):
            out[name] = svc.pop("files")
    return out


def _point(
    path: Path,
    text: str,
    target_raw: dict[str, Any],
    service_files: dict[str, list[Any]],
    load_raw: dict[str, Any],
    levels: dict[str, Any],
) -> Point:
    # {port}, {dir}, {address}, {host} and the services' stay as text until the target starts.
    values = {**levels, **{n: "{" + n + "}" for n in BUILTIN_NAMES | service_names(target_raw)}}
    at = " (at " + " ".join(f"{k}={v}" for k, v in levels.items()) + ")" if levels else ""
    files = target_raw.get("files", [])
    body = {**fx.substitute({k: v for k, v in target_raw.items() if k != "files"}, values), "files": files}
    for name, svc_files in service_files.items():
        body["services"][name]["files"] = svc_files
    try:
        target = Target.model_validate(body)
    except pydantic.ValidationError as e:
        raise _pydantic(path, text, ("target",), e, at) from None
    try:
        load = Load.model_validate(fx.substitute(load_raw, values))
    except pydantic.ValidationError as e:
        raise _pydantic(path, text, ("load",), e, at) from None
    return Point(levels, target, load)


def load_config(load: Load, base_url: str, exp: Experiment, plan_dir: Path) -> LoadConfig:
    """Raises SettingError naming the [load] key at fault."""
    url = load.url or base_url.rstrip("/") + "/" + load.path.lstrip("/")
    run = {"url": url, "requests": exp.requests, "duration": exp.duration_s, "seed": exp.seed}
    settings = load.model_copy(update=run)
    return engine_config(settings, base_dir=plan_dir)


def search_config(load: Load, base_url: str, exp: Experiment, plan_dir: Path, search: SearchSettings) -> LoadConfig:
    """A capacity search's base: the point's load as the open loop each step
    is (the search sets each step's rate and length)."""
    url = load.url or base_url.rstrip("/") + "/" + load.path.lstrip("/")
    run = {
        "url": url,
        "seed": exp.seed,
        "rate": search.min_rps,
        "arrivals": search.arrivals,
        "duration": 1.0,
        "timeout": load.timeout if load.timeout is not None else search.timeout_s(),
    }
    return engine_config(load.model_copy(update=run), base_dir=plan_dir)


# A search plan's warm-up, when it is given as a count: its steps have no
# fixed length to copy.
SEARCH_WARMUP_S = 5.0


def warmup_config(plan: Plan, load: Load, base_url: str, plan_dir: Path) -> LoadConfig:
    """A warm-up run: the point's load (a search plan's as the closed loop
    its [load] describes), for the warm-up's length or the runs' own."""
    exp, length_s = plan.experiment, plan.experiment.warmup.length_s
    if length_s is None and plan.search is not None:
        length_s = SEARCH_WARMUP_S
    if length_s is not None:
        exp = exp.model_copy(update={"duration_s": length_s, "requests": None})
    return load_config(load, base_url, exp, plan_dir)


def run_config(plan: Plan, load: Load, base_url: str, plan_dir: Path, warmup: bool = False) -> LoadConfig:
    """What one run of a point loads: its fixed load, or a search's base."""
    if warmup:
        return warmup_config(plan, load, base_url, plan_dir)
    if plan.search is not None:
        return search_config(load, base_url, plan.experiment, plan_dir, plan.search)
    return load_config(load, base_url, plan.experiment, plan_dir)
