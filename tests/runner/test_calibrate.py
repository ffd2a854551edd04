"""The generator's calibrated ceiling, as the report says it."""

from corebench.runner.calibrate import Ceiling


def test_the_ceiling_names_its_cpus_in_the_right_number():
    one = Ceiling([0], [1], False, 64, 61_965.0, 0.92, 67_478.0)
    assert one.sentence() == (
        "generator ceiling: 67,478 req/s (61,965 req/s reached at 0.92 of its 1 core, 64 connections; "
        "generator on CPU 1, built-in server on CPU 0)"
    )
    both = Ceiling([0, 1], [0, 1], True, 64, 44_877.0, 1.88, 94_987.0)
    assert "generator on CPUs 0,1, built-in server on CPUs 0,1; they share cores)" in both.sentence()
