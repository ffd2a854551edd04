"""HTTP/1.1 and HTTP/2 as a factor of a plan, on the built-in server: each
point's runs speak the protocol its level names, and the report says which."""

from pathlib import Path

from corebench.report import load
from tests.support.experiments import run_plan
from tests.support.records import as_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "http2"
# HTTP/1.1 and HTTP/2 as the levels of a factor, on the built-in server.
BOTH = """
[experiment]
calibrate = false
repetitions = 1
duration = "0.3s"

[factors]
http = ["1.1", "2"]

[target]
builtin = { model = "async", workers = 1 }

[load]
path = "/static/2k"
http = "{http}"
concurrency = 4
keep_alive = true
"""


def test_http_is_a_factor_like_any_other(tmp_path):
    ran = run_plan(
        tmp_path,
        BOTH,
    )
    assert (ran.out.ok, ran.out.failed) == (2, 0), [r.error for r in ran.runs]
    spoke = {r.point["http"]: as_json(r.result) for r in ran.runs}
    assert spoke["1.1"]["http_version"] == "1.1" and "http2" not in spoke["1.1"]
    assert spoke["2"]["http_version"] == "2" and spoke["2"]["http2"]["connections"] == 4
    assert all(r["failed"] == 0 and r["document_length"] == 2048 for r in spoke.values())
    said = [v for v in load(ran.store).verdicts if v.startswith("Protocol: ")]
    assert said == [
        "Protocol: the measured runs spoke HTTP/1.1 in 1 and HTTP/2 in 1 (HTTP/2 runs on epoll; docs/http2.md)."
    ]


def test_the_example_plans_check():
    from corebench.plan import load_plan
    from corebench.runner import preflight

    for name in ("plan.toml", "streams.toml"):
        exp = load_plan(EXAMPLE / name)
        preflight.check(exp)
        assert len(exp.points) >= 4, name


def test_the_builtin_server_over_tls_speaks_both_by_alpn(tmp_path):
    ran = run_plan(
        tmp_path,
        """
[experiment]
calibrate = false
repetitions = 1
duration = "0.3s"

[factors]
http = ["1.1", "2"]

[target]
builtin = { model = "threads", workers = 4, tls = true }

[load]
path = "/static/2k"
http = "{http}"
concurrency = 2
keep_alive = true
""",
    )
    assert (ran.out.ok, ran.out.failed) == (2, 0), [r.error for r in ran.runs]
    for r in ran.runs:
        result = as_json(r.result)
        assert result["url"].startswith("https://") and result["failed"] == 0, result["error_samples"]
        assert result["http_version"] == r.point["http"]


def test_each_protocol_gets_its_own_generator_ceiling(tmp_path):
    """A ceiling measured over HTTP/1.1 with keep-alive does not hold for
    HTTP/2 nor for a connection per request: each is calibrated apart, and
    a run is held against its own protocol's ceiling."""
    ran = run_plan(
        tmp_path,
        BOTH.replace("calibrate = false\n", ""),
    )
    exp = ran.experiment
    assert exp.calibration is not None
    assert sorted((c.http, c.keep_alive) for c in exp.calibration) == [("1.1", True), ("2", True)]
    assert all(c.error is None and c.ceiling_rps > 0 for c in exp.calibration)
    for r in ran.runs:
        assert r.layout is not None
        mine = next(c for c in exp.calibration if c.http == r.point["http"])
        assert r.layout.generator_ceiling_rps == round(mine.ceiling_rps), "held against its own protocol's ceiling"
    said = [v for v in load(ran.store).verdicts if v.startswith("Generator ceiling for HTTP/")]
    assert len(said) == 2 and any(
        v.startswith("Generator ceiling for HTTP/2, keep-alive, a closed loop: ") for v in said
    )


def test_each_load_model_gets_its_own_generator_ceiling(tmp_path):
    """An open loop's timers and users' pauses cost the generator CPU a
    closed loop does not spend: each model is calibrated as itself, below
    saturation, and its runs held against that ceiling."""
    from corebench.config.settings import LoadSettings
    from corebench.runner.calibrate import loop_model

    kinds = ({}, {"rate": 100}, {"think": "1s"}, {"think": "0"}, {"think": "0..0"})
    # Users who never think send as a closed loop does (realistic-vs-benchmark's think=0).
    assert [loop_model(LoadSettings(**kw)) for kw in kinds] == ["closed", "open", "users", "closed", "closed"]
    for model, line in (("open", 'model = "rate"\nrate = 2000'), ("users", 'model = "users"\nthink = "2ms"')):
        folder = tmp_path / model
        folder.mkdir()
        plan = f"""
[experiment]
repetitions = 1
duration = "0.5s"

[target]
builtin = {{ model = "async", workers = 1 }}

[load]
path = "/static/2k"
concurrency = 4
{line}
"""
        ran = run_plan(folder, plan)
        assert (ran.out.ok, ran.out.failed) == (1, 0), [r.error for r in ran.runs]
        exp = ran.experiment
        assert exp.calibration is not None
        (c,) = exp.calibration
        assert c.model == model and c.error is None and c.ceiling_rps >= c.rps > 0, c
        # Measured on the plan's own page, three times, with an interval.
        assert c.page_bytes == 2048 and c.repeats == 3, c
        assert c.ceiling_low_rps is not None and c.ceiling_high_rps is not None
        assert 0 < c.ceiling_low_rps <= c.ceiling_rps <= c.ceiling_high_rps, c
        (r,) = ran.runs
        assert r.layout is not None and r.layout.generator_ceiling_rps == round(c.ceiling_rps)
        loop = {"open": "an open loop", "users": "users with think time"}[model]
        said = [v for v in load(ran.store).verdicts if v.startswith("Generator ceiling for HTTP/1.1")]
        assert said and said[0].startswith(f"Generator ceiling for HTTP/1.1, keep-alive, {loop}: about "), said
