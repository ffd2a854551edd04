"""The checks before a plan's first run (runner/preflight.py)."""

from pathlib import Path

import pytest

from corebench import engine
from corebench.errors import UsageError
from corebench.plan import load_plan
from corebench.runner import preflight

LINE = '127.0.0.1 - - [28/Nov/2026:10:00:{s:02d} +0000] "GET /p{i} HTTP/1.1" 200 5\n'
PLAN = """
[experiment]
repetitions = 1

[factors]
concurrency = [1, 2, 4]
log = ["a.log", "b.log"]

[target]
builtin = {{}}

[load]
model = "replay"
log = "{{log}}"
speed = {speed}
concurrency = "{{concurrency}}"
"""


def _plan(tmp_path: Path, speed: float, b_lines: str) -> Path:
    (tmp_path / "a.log").write_text("".join(LINE.format(s=i % 60, i=i) for i in range(100)))
    (tmp_path / "b.log").write_text(b_lines)
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(speed=speed))
    return plan


def test_a_replayed_log_is_read_whole_once_not_once_per_point(tmp_path, monkeypatch):
    plan = _plan(tmp_path, 1.0, "".join(LINE.format(s=i % 60, i=i) for i in range(10)))
    checked: list[tuple[str, int | None]] = []
    real = engine.check

    def check(cfg, **kw):
        checked.append((Path(cfg.replay.path).name, cfg.replay.limit))
        return real(cfg, **kw)

    monkeypatch.setattr(preflight.engine, "check", check)
    exp = load_plan(plan)
    preflight.check(exp)
    # Each log whole at its first point; its other points on its first request.
    whole = [name for name, limit in checked if limit is None]
    assert sorted(whole) == ["a.log", "b.log"], checked
    assert len(checked) == len(exp.points) and all(limit in (None, 1) for _, limit in checked)


def test_a_bad_log_is_still_refused_before_the_first_run(tmp_path):
    # b.log is read whole at its first point: a log with no request is refused.
    plan = _plan(tmp_path, 1.0, "not a log line\n")
    with pytest.raises(UsageError, match="none of its 1 lines is a request"):
        preflight.check(load_plan(plan))
