"""One definition of every load setting: the CLI's flags, a plan's [load]
table and the Python API say the same load in the same words and give the
same engine configuration, and every field of the engine's schema can be
set from each of them (or is listed as internal, with the reason)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import corebench
from corebench import _engine
from corebench.cli import main as cli_main
from corebench.config.settings import INTERNAL
from corebench.plan import load_plan
from corebench.plan.experiment import load_config

BASE = "http://127.0.0.1:8080"
URL = BASE + "/x"
DATA = Path(tempfile.mkdtemp(prefix="corebench-entry-points-"))
URL_FILE = DATA / "urls.txt"
URL_FILE.write_text(f"{URL}\n/y POST a=1\n")
LOG = DATA / "access.log"
LOG.write_text(
    "".join(f'127.0.0.1 - - [10/Oct/2024:13:55:{i:02d} +0000] "GET /p{i} HTTP/1.1" 200 {100 + i}\n' for i in range(20))
)


def via_cli(s: dict[str, Any], capsys: Any) -> dict[str, Any]:
    """`corebench load|replay … --print-config`, in-process."""
    flag_args: list[str] = []
    simple = {
        "duration": "-t",
        "method": "-m",
        "timeout": "-s",
        "threads": "--threads",
        "busy_poll": "--busy-poll",
        "linger": "--linger",
        "io": "--io",
        "rate": "--rate",
        "ramp": "--ramp",
        "think": "--think",
        "urls": "--urls",
        "seed": "--seed",
        "speed": "--speed",
        "limit": "--limit",
        "content_type": "-T",
        "streams": "--streams",
    }
    for key, flag in simple.items():
        if s.get(key) is not None:
            flag_args += [flag, str(s[key])]
    if s.get("concurrency") is not None:
        flag_args += ["--users" if s.get("think") is not None else "-c", str(s["concurrency"])]
    switches = {
        "keep_alive": "-k",
        "variable_length": "-l",
        "random": "--random",
        "loop": "--loop",
        "allow_remote": "--allow-remote",
    }
    flag_args += [flag for key, flag in switches.items() if s.get(key)]
    if s.get("http") == "1.0":
        flag_args.append("--http1.0")
    if s.get("http") == "2":
        flag_args.append("--http2")
    for name, value in s.get("headers", []):
        flag_args += ["-H", f"{name}: {value}"]
    # ab's -X, -A, -C; -g (a trace) and -v 2 (the heads) ask the engine to keep more.
    if s.get("proxy") is not None:
        flag_args += ["-X", s["proxy"]]
    if s.get("auth") is not None:
        flag_args += ["-A", s["auth"]]
    for c in s.get("cookies") or []:
        flag_args += ["-C", c]
    if s.get("trace"):
        flag_args += ["-g", str(DATA / "requests.tsv")]
    if s.get("heads"):
        flag_args += ["-v", "2"]
    if s.get("log") is not None:
        argv = ["replay", s["log"], "--target", s["url"], *flag_args]
    else:
        argv = ["load", s["url"], *flag_args]
    capsys.readouterr()
    code = cli_main([*argv, "--print-config"])
    out = capsys.readouterr()
    assert code == 0, (argv, out.err)
    return dict(json.loads(out.out))


def via_plan(s: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """A plan whose [load] table holds the settings; its run's length and seed in [experiment]."""
    run_keys = ("url", "duration", "requests", "seed")
    load = {k: v for k, v in s.items() if k not in run_keys and v is not None}
    # A table (`headers = { Accept = "x" }`) cannot repeat a name; pairs can.
    load["headers"] = [list(h) for h in s.get("headers", [])]
    load["path"] = s["url"].removeprefix(BASE)
    load["model"] = "replay" if s.get("log") else "rate" if s.get("rate") else "users" if s.get("think") else "closed"
    plan = {
        "experiment": {"repetitions": 1, "duration": s["duration"], "seed": s.get("seed", 1)},
        "target": {"url": BASE},
        "load": load,
    }
    path = tmp / "plan.toml"
    path.write_text(tomli_w.dumps(plan))
    exp = load_plan(path)
    p = exp.points[0]
    assert p.target.url is not None
    return dict(json.loads(load_config(p.load, p.target.url, exp.plan.experiment, exp.path.parent).engine_json()))


def via_api(s: dict[str, Any]) -> dict[str, Any]:
    kwargs = {k: v for k, v in s.items() if v is not None and k != "url"}
    return dict(json.loads(corebench.load_config(s["url"], **kwargs).engine_json()))


names = st.sampled_from(["X-A", "X-Trace", "Accept"])
common = {
    "url": st.just(URL),
    "duration": st.sampled_from(["1s", "2.5s", "500ms"]),
    # Plans keep connections alive unless told: the CLI's and the API's default is ab's (not).
    "keep_alive": st.booleans(),
    "http": st.sampled_from([None, "1.0", "1.1", "2"]),
    "streams": st.sampled_from([None, 1, 8]),
    "headers": st.lists(st.tuples(names, st.sampled_from(["1", "yes", "a b"])), max_size=2),
    "timeout": st.sampled_from([None, "5s", "250ms"]),
    "threads": st.one_of(st.none(), st.integers(1, 4)),
    "busy_poll": st.sampled_from([None, "20us"]),
    "linger": st.sampled_from([None, 0, 10, "auto", "off", "always"]),
    "io": st.sampled_from([None, "auto", "uring", "epoll"]),
    "seed": st.integers(1, 1000),
    "concurrency": st.one_of(st.none(), st.integers(1, 64)),
}
# ab's -A and -C: `corebench load`'s, not replay's.
ab = {
    "auth": st.sampled_from([None, "user:secret"]),
    "cookies": st.sampled_from([None, ["a=1"], ["a=1", "b=2"]]),
}
closed = st.fixed_dictionaries(
    {
        **common,
        **ab,
        "method": st.sampled_from([None, "GET", "HEAD"]),
        "variable_length": st.sampled_from([None, True]),
        "urls": st.sampled_from([None, str(URL_FILE)]),
        "random": st.sampled_from([None, True]),
    }
)
rate = st.fixed_dictionaries(
    {
        **common,
        **ab,
        "rate": st.sampled_from(["500", "2000", "100..400"]),
        "method": st.sampled_from([None, "GET"]),
    }
).map(lambda s: {**s, "ramp": "1s" if ".." in s["rate"] else None})
users = st.fixed_dictionaries(
    {**common, **ab, "think": st.sampled_from(["1s", "0.1s..0.5s", "0"]), "concurrency": st.integers(1, 16)}
)
replay = st.fixed_dictionaries(
    {
        **common,
        "log": st.just(str(LOG)),
        "speed": st.sampled_from([None, 10.0]),
        "limit": st.sampled_from([None, 5]),
        "loop": st.sampled_from([None, True]),
    }
)


def _speakable(s: dict[str, Any]) -> dict[str, Any]:
    """Streams need HTTP/2, HTTP/2 runs on epoll, and neither HTTP/2 nor a run
    without keep-alive promises to hold responses (`linger` always, or a
    percent): the engine refuses the rest."""
    holds = s.get("linger") not in (None, 0, "auto", "off")
    if holds and (s.get("http") == "2" or not s.get("keep_alive")):
        s = {**s, "linger": None}
    if s.get("http") != "2":
        return {**s, "streams": None if s.get("streams") != 1 else 1}
    return {**s, "io": None if s.get("io") == "uring" else s.get("io")}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(s=st.one_of(closed, rate, users, replay).map(lambda s: _speakable(s)))
def test_the_three_entry_points_give_one_engine_config(s: dict[str, Any], capsys: Any, tmp_path: Path) -> None:
    cli, plan, api = via_cli(s, capsys), via_plan(s, tmp_path), via_api(s)
    assert cli == api, s
    assert plan == api, s


# Engine field -> settings that give it a value other than its default.
REACH: dict[str, dict[str, Any]] = {
    "url": {"url": BASE + "/other"},
    "concurrency": {"concurrency": 7},
    "requests": {},  # the plan's [experiment] requests; tested below with duration
    "duration_s": {"duration": "3s"},
    "keep_alive": {"keep_alive": True},
    "http_version": {"http": "1.0"},
    "streams": {"http": "2", "streams": 4},
    "method": {"method": "HEAD"},
    "headers": {"headers": [("X-A", "1")]},
    "content_type": {"content_type": "text/plain"},
    "timeout_s": {"timeout": "7s"},
    "threads": {"threads": 3},
    "variable_length": {"variable_length": True},
    "allow_remote": {"allow_remote": True},
    "busy_poll_us": {"busy_poll": "20us"},
    "linger": {"linger": "off"},
    "linger_percent": {"linger": 20, "keep_alive": True},
    "io": {"io": "epoll"},
    "rate": {"rate": "500"},
    "think_s": {"think": "1s", "concurrency": 2},
    "urls": {"urls": str(URL_FILE)},
    "random_order": {"random": True},
    "seed": {"seed": 9},
    "replay": {"log": str(LOG)},
    "proxy": {"proxy": "127.0.0.1:3128"},
    "trace": {"trace": True},
    "capture_heads": {"heads": True},
}


def test_every_schema_field_is_reachable_or_internal(capsys: Any, tmp_path: Path) -> None:
    fields = set(json.loads(_engine.load_config_schema())["properties"])
    assert fields == set(REACH) | set(INTERNAL), "wire the new engine field into LoadSettings, or list it as INTERNAL"
    base = {"url": URL, "duration": "1s", "keep_alive": False, "seed": 1}
    default = via_api(base)
    for field, change in REACH.items():
        if not change:
            continue
        s = {**base, **change}
        for name, got in (("cli", via_cli(s, capsys)), ("plan", via_plan(s, tmp_path)), ("api", via_api(s))):
            assert got[field] != default[field], f"{field} is not set from the {name}"
    by_count = via_api({"url": URL, "requests": 5})
    assert by_count["requests"] == 5 and by_count["duration_s"] is None


def test_defaults_and_limits_come_from_the_engine() -> None:
    schema = json.loads(_engine.load_config_schema())["properties"]
    config = corebench.load_config(URL)
    assert config.timeout_s == schema["timeout_s"]["default"]
    assert config.threads == schema["threads"]["default"]
    top = schema["concurrency"]["maximum"]
    try:
        corebench.load_config(URL, concurrency=top + 1)
    except corebench.UsageError as e:
        assert getattr(e, "key", None) == "concurrency"
    else:
        raise AssertionError("a concurrency above the engine's limit was accepted")


def test_the_generated_models_match_the_engine() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    p = subprocess.run(
        [sys.executable, str(root / "scripts" / "gen_engine_models.py"), "--check"], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_linger_says_what_it_takes() -> None:
    from corebench.config.settings import LoadSettings, SettingError, engine_config

    def cfg(v: object) -> tuple[str, int]:
        c = engine_config(LoadSettings(url="http://127.0.0.1:1/", linger=v))
        return c.linger, c.linger_percent

    assert cfg("auto") == ("auto", 10) and cfg(0) == ("off", 10) and cfg("15") == ("always", 15)
    for bad, words in (("sometimes", "is not auto, always, off"), (-1, "is negative")):
        try:
            cfg(bad)
        except SettingError as e:
            assert e.key == "linger" and words in str(e), str(e)
        else:
            raise AssertionError(f"linger={bad!r} was accepted")
