"""Property-based fuzzing of plan files (hypothesis): whatever a plan.toml
holds, `load_plan` gives an experiment or refuses the file with the
project's UsageError, one line naming the file; never another exception
(which the CLI would print as a traceback).

Plans are drawn from the plan's own vocabulary (the sections' keys, as the
models name them, with plausible and implausible values: durations, ranges,
placeholders, numbers of every size), then written as TOML; some are then
cut and spliced as text, so the TOML reader's errors are covered too.
Nothing here starts a target or sends a request."""

from __future__ import annotations

import os
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corebench.config.cluster import ClusterConfig
from corebench.config.settings import LoadSettings
from corebench.errors import UsageError
from corebench.plan import ExperimentPlan, load_plan
from corebench.plan.model import Builtin, Experiment, Load, Machine, Target
from corebench.plan.objective import SearchSettings
from tests.support.known_bugs import known

# Each example writes its plan here; a fixed folder, so the examples can be
# replayed and shrunk without a fixture (hypothesis runs them all in one test).
DIR = Path(tempfile.mkdtemp(prefix="corebench-fuzz-plan-"))
(DIR / "t.conf.j2").write_text("listen {{ port }} workers {{ c }}\n")
(DIR / "urls.txt").write_text("http://127.0.0.1:8080/a\n/b POST x=1\n")
(DIR / "access.log").write_text('127.0.0.1 - - [10/Oct/2024:13:55:36 +0000] "GET /p HTTP/1.1" 200 5\n')


def keys(model: Any) -> list[str]:
    """A model's keys as a plan writes them (aliases where it has them)."""
    return [f.alias or name for name, f in model.model_fields.items()]


DURATIONS = st.sampled_from(
    ["10s", "2m", "500ms", "20us", "1.5h", "0", "0s", "-1s", "1", "soon", "", " 3 s ", "1e3s", "9" * 400 + "s"]
)
PLACEHOLDERS = st.sampled_from(["{c}", "{cpus}", "{x}", "{port}", "{dir}", "{nope}", "a{c}b", "{c}{x}", "{", "{}"])
NUMBERS = st.one_of(
    st.integers(-5, 300),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
)
TEXT = st.text(max_size=24)
SCALARS = st.one_of(st.booleans(), NUMBERS, TEXT, DURATIONS, PLACEHOLDERS)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)
LOOPBACK_URLS = st.sampled_from(
    [
        "http://127.0.0.1:8080/",
        "http://[::1]:8080/x",
        "https://localhost:8443/",
        "http://127.0.0.1:0/",
        "http://127.0.0.1:99999/",
        "http://192.0.2.1/",
        "ftp://127.0.0.1/",
        "http://",
        "127.0.0.1:8080",
        "{port}",
        "http://127.0.0.1:{port}/{c}",
    ]
)

# Plausible values for keys whose meaning the plan gives; any other key
# gets VALUES.
PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "repetitions": st.one_of(st.integers(-2, 1200), st.sampled_from(["auto", "3", "many"])),
    "max_repetitions": st.integers(-1, 1200),
    "precision": st.one_of(st.floats(-1, 2), st.sampled_from(["2%", "0.05", "5 %", "x%"])),
    "warmup": st.one_of(
        st.integers(-1, 120),
        DURATIONS,
        st.fixed_dictionaries({}, optional={"runs": st.integers(-1, 120), "length_s": NUMBERS}),
    ),
    "schedule": st.sampled_from(["interleaved", "blocked", "random"]),
    "duration": st.one_of(DURATIONS, NUMBERS),
    "cooldown": st.one_of(DURATIONS, NUMBERS),
    "ready_timeout": DURATIONS,
    "stop_timeout": DURATIONS,
    "timeout": DURATIONS,
    "ramp": DURATIONS,
    "busy_poll": DURATIONS,
    "linger": st.one_of(st.integers(-1, 30), st.sampled_from(["auto", "off", "always", "sometimes", "10%"])),
    "requests": st.integers(-1, 10**6),
    "seed": NUMBERS,
    "concurrency": st.one_of(st.integers(-1, 5000), PLACEHOLDERS),
    "threads": st.integers(-1, 64),
    "rate": st.one_of(NUMBERS, st.sampled_from(["100..5000", "5000", "fast", "10..", "..5"])),
    "think": st.one_of(DURATIONS, st.sampled_from(["0.5s..2s", "2s..1s", "0"])),
    "arrivals": st.sampled_from(["poisson", "uniform", "gamma"]),
    "model": st.sampled_from(["closed", "rate", "users", "replay", "prefork", "threads", "async", "other"]),
    "url": LOOPBACK_URLS,
    "ready_url": LOOPBACK_URLS,
    "urls": st.sampled_from(["urls.txt", "missing.txt", "/nonexistent/urls.txt"]),
    "log": st.sampled_from(["access.log", "missing.log"]),
    "path": st.sampled_from(["/", "/x?y=1", "x", "", "/{c}"]),
    "method": st.sampled_from(["GET", "POST", "get", "", "G E T", "M-SEARCH"]),
    "http": st.sampled_from(["1.0", "1.1", "2", "3", ""]),
    "headers": st.dictionaries(st.sampled_from(["Accept", "Host", "", "X:Y", "Cookie"]), TEXT, max_size=3),
    "cpus": st.one_of(st.floats(-1, 5000), st.integers(-1, 5000), PLACEHOLDERS),
    "workers": st.integers(-1, 5000),
    "args": st.lists(st.one_of(TEXT, st.integers()), max_size=3),
    "command": st.lists(st.one_of(TEXT, st.integers(), PLACEHOLDERS), max_size=3),
    "version_command": st.lists(TEXT, max_size=2),
    "recipe": st.sampled_from(["apache", "nginx", "lighttpd"]),
    "settings": st.dictionaries(st.sampled_from(["mpm", "workers", "worker_connections", "x"]), SCALARS, max_size=2),
    "pages": st.lists(st.integers(-1, 200 * 1024 * 1024), max_size=3),
    "address": st.sampled_from(["127.0.0.1", "::1", "0.0.0.0", "localhost", "10.0.0.1", "{address}"]),
    "stop_signal": st.sampled_from(["SIGTERM", "SIGWINCH", "TERM", "SIG_DFL", "SIGNOPE"]),
    "restart": st.sampled_from(["config", "point", "never"]),
    "files": st.lists(
        st.fixed_dictionaries(
            {"path": st.sampled_from(["t.conf", "../t.conf", "/etc/x", "a/b.conf", "{c}.conf"])},
            optional={"template": st.sampled_from(["t.conf.j2", "missing.j2"]), "content": TEXT},
        ),
        max_size=2,
    ),
    "slo": st.sampled_from(["p99<=20ms", "p99<=20ms,errors<=0.1%", "p50<5ms", "rps>5", "p99<=20ms,p99<=1s", "", ","]),
    "start_rate": NUMBERS,
    "min_rate": NUMBERS,
    "max_rate": NUMBERS,
    "step": DURATIONS,
    "max_step": DURATIONS,
    "max_steps": st.integers(-1, 2000),
    "agents": st.integers(-1, 2000),
    "clock_ghz": NUMBERS,
    "price_per_hour": st.dictionaries(st.sampled_from(["cpus", "c"]), st.dictionaries(TEXT, NUMBERS, max_size=2)),
}


def section(fields: list[str], extra: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """Some of a section's keys with plausible or any values, sometimes a stray key."""
    names = st.sampled_from(fields + (["nonsense"] if extra else []))

    def value(name: str) -> st.SearchStrategy[Any]:
        plausible = PLAUSIBLE.get(name)
        return st.one_of(plausible, VALUES) if plausible is not None else VALUES

    return st.lists(names, max_size=5, unique=True).flatmap(
        lambda chosen: st.fixed_dictionaries({n: value(n) for n in chosen})
    )


# A factor's levels: a list, a single value, or a range string. Ranges are
# kept short: every point of the full factorial is built and validated.
HUGE = st.integers(min_value=10**300, max_value=10**320)
RANGES = st.builds(
    lambda a, n, step: f"{a}..{'max' if n is None else a + n}" + step,
    st.one_of(st.integers(-3, 16), HUGE),
    st.none() | st.integers(-2, 10) | HUGE,
    st.sampled_from(["", ":1", ":2", ":0", ":-1", ":0.5", ":x2", ":x1", ":x1.5", ": x 2", ":1e400", ":0.000001"]),
)
LEVELS = st.one_of(
    st.lists(st.one_of(st.integers(-2, 64), st.floats(0, 4), st.booleans(), st.text(max_size=6)), max_size=4),
    RANGES,
    SCALARS,
    st.sampled_from(["1..max:x2", "1..max", "0.5..2:0.5", "25..175:25", "1..64:x2", "3..1", "a..b", "1..2:"]),
)
FACTORS = st.dictionaries(
    st.sampled_from(["c", "cpus", "x", "model", "port", "dir", "1bad", "rate"]), LEVELS, max_size=3
)

TARGET_FIELDS = keys(Target)
TARGETS = st.one_of(
    st.fixed_dictionaries({"builtin": section(keys(Builtin))}, optional={"cpus": PLAUSIBLE["cpus"]}),
    st.fixed_dictionaries({"url": LOOPBACK_URLS}),
    st.fixed_dictionaries({"command": PLAUSIBLE["command"]}, optional={"files": PLAUSIBLE["files"]}),
    st.fixed_dictionaries({"recipe": PLAUSIBLE["recipe"]}, optional={"settings": PLAUSIBLE["settings"]}),
    section(TARGET_FIELDS),
)
LOAD_FIELDS = sorted(set(keys(Load)) | set(keys(LoadSettings)))


def table(fields: list[str]) -> st.SearchStrategy[Any]:
    """A section: mostly a table of its keys, sometimes not a table at all."""
    return st.one_of(section(fields), section(fields), section(fields), SCALARS)


PLANS = st.fixed_dictionaries(
    {"target": TARGETS},
    optional={
        "experiment": table(keys(Experiment)),
        "machine": table(keys(Machine)),
        "factors": FACTORS | SCALARS,
        "load": table(LOAD_FIELDS),
        "thresholds": st.dictionaries(
            st.sampled_from(["p99", "p99.9", "mean", "errors", "rps", "p42", "x"]),
            st.sampled_from(["<20ms", "<=1s", ">5000", "<0.1%", "<=10", "<", "20ms", "<20"]),
            max_size=3,
        ),
        "search": table(keys(SearchSettings)),
        "cluster": table(keys(ClusterConfig)),
        "nonsense": VALUES,
    },
)

# What `corebench run PLAN` passes from its flags (--seed, -t, -r).
OVERRIDES = st.fixed_dictionaries(
    {},
    optional={
        "seed": st.integers(-5, 2**70),
        "duration": DURATIONS,
        "repetitions": st.one_of(st.integers(-2, 1200), st.just("auto")),
    },
)


@st.composite
def plan_texts(draw: st.DrawFn) -> str:
    """A plan as TOML, sometimes cut and spliced as text."""
    text = tomli_w.dumps(draw(PLANS))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 8))
        junk = draw(st.text(alphabet=string.printable + "é{}[]=\"'", max_size=12))
        text = text[:at] + junk + text[at + cut :]
    return text


def check_plan(text: str, overrides: dict[str, Any], name: str = "plan.toml") -> ExperimentPlan | None:
    """load_plan's contract: an experiment, or a UsageError in one line."""
    path = DIR / name
    path.write_text(text)
    try:
        exp = load_plan(path, dict(overrides))
    except Exception as e:
        if known(e):
            return None
        if not isinstance(e, UsageError):
            raise
        message = str(e)
        assert message and "\n" not in message, f"not one line: {message!r}"
        assert message.startswith(str(path)), f"does not name the plan: {message!r}"
        return None
    assert exp.points, "an experiment without a point"
    for point in exp.points:
        assert set(point.levels) == set(exp.factors)
    product = 1
    for levels in exp.factors.values():
        product *= len(levels)
    assert len(exp.points) == product
    return exp


# COREBENCH_FUZZ_EXAMPLES=5000 for a deeper search than `make test`'s.
EXAMPLES = int(os.environ.get("COREBENCH_FUZZ_EXAMPLES", "400"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(plan=PLANS, overrides=OVERRIDES)
def test_any_plan_loads_or_is_refused_in_one_line(plan: dict[str, Any], overrides: dict[str, Any]) -> None:
    check_plan(tomli_w.dumps(plan), overrides)


@FUZZ
@given(text=plan_texts())
def test_any_text_loads_or_is_refused_in_one_line(text: str) -> None:
    check_plan(text, {})


def test_the_contract_holds_on_known_plans() -> None:
    exp = check_plan('[target]\nurl = "http://127.0.0.1:8080/"\n[factors]\nc = [1, 2]\nx = "1..3"\n', {})
    assert exp is not None and len(exp.points) == 6
    assert check_plan("[target]\nurl = 5\n", {}) is None
    assert check_plan("not toml = = =", {}) is None


# Bugs the fuzzing found in plan/, fixed: their inputs stay as regression tests.


def test_found_by_fuzzing_factor_range_beyond_float() -> None:
    for spec in ("0..1" + "0" * 400, "1..1" + "0" * 400 + ":x2", "0.5..1" + "0" * 400):
        path = DIR / "range.toml"
        path.write_text(f'[target]\nurl = "http://127.0.0.1:8080/"\n[factors]\nc = "{spec}"\n')
        with pytest.raises(UsageError, match="factors.c"):
            load_plan(path)


def test_found_by_fuzzing_overrides_on_an_experiment_that_is_not_a_table() -> None:
    path = DIR / "experiment.toml"
    path.write_text('experiment = false\n[target]\nurl = "http://127.0.0.1:8080/"\n')
    with pytest.raises(UsageError, match="experiment"):
        load_plan(path, {"seed": 0})


def test_found_by_fuzzing_a_key_with_a_line_break_breaks_the_line() -> None:
    path = DIR / "key.toml"
    path.write_text('[target]\nurl = "http://127.0.0.1:8080/"\n[machine.price_per_hour]\n"\\n" = false\n')
    with pytest.raises(UsageError) as e:
        load_plan(path)
    assert "\n" not in str(e.value), str(e.value)
