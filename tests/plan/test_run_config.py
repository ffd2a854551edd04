"""A point's load section becomes the engine's LoadConfig, for every model."""

from pathlib import Path

import pytest

from corebench.errors import UsageError
from corebench.plan import load_plan
from corebench.plan.experiment import load_config

BASE = """\
[experiment]
duration = "5s"

[target]
url = "http://127.0.0.1:8080"

[load]
"""


def config(tmp_path: Path, load: str):
    plan = tmp_path / "plan.toml"
    plan.write_text(BASE + load)
    exp = load_plan(plan)
    return load_config(exp.points[0].load, "http://127.0.0.1:8080/", exp.plan.experiment, tmp_path)


def test_each_model(tmp_path):
    c = config(tmp_path, 'path = "/a?b=1"\nconcurrency = 7\n')
    assert (c.url, c.concurrency, c.duration_s, c.rate, c.keep_alive) == (
        "http://127.0.0.1:8080/a?b=1",
        7,
        5.0,
        None,
        True,
    )
    c = config(tmp_path, 'model = "rate"\nrate = "100..900"\nramp = "4s"\n')
    assert (c.rate.rps, c.rate.end_rps, c.rate.ramp_s, c.concurrency) == (100, 900, 4.0, 1000)
    c = config(tmp_path, 'model = "users"\nthink = "0.5s..2s"\nconcurrency = 25\n')
    assert (c.think_s, c.concurrency) == ((0.5, 2.0), 25)
    (tmp_path / "access.log").write_text("")
    c = config(tmp_path, 'model = "replay"\nlog = "access.log"\nspeed = 10\nconcurrency = 25\n')
    assert (Path(c.replay.path), c.replay.speed, c.variable_length) == (tmp_path / "access.log", 10, True)
    (tmp_path / "urls.txt").write_text("/x\n/y POST a=1\n")
    c = config(tmp_path, 'urls = "urls.txt"\nrandom = true\n')
    assert [(u.url, u.method) for u in c.urls] == [
        ("http://127.0.0.1:8080/x", "GET"),
        ("http://127.0.0.1:8080/y", "POST"),
    ]
    assert c.random_order


@pytest.mark.parametrize(
    "load, fragment",
    [
        ('model = "rate"\n', "the rate model needs rate"),
        ('think = "1s"\n', "think belongs to the users model"),
        ('model = "users"\nthink = 1\ntimeout = "soon"\n', "load.timeout"),
    ],
)
def test_model_settings_are_checked(tmp_path, load, fragment):
    with pytest.raises(UsageError, match=fragment):
        config(tmp_path, load)
