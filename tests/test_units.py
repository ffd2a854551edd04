import pytest

from corebench.units import parse_duration_s


@pytest.mark.parametrize(
    "text, seconds", [("10s", 10), ("2m", 120), ("500ms", 0.5), ("3", 3), ("1.5h", 5400), ("20us", 20e-6)]
)
def test_durations(text, seconds):
    assert parse_duration_s(text) == pytest.approx(seconds)


# The last two: found by tests/cli/test_fuzz_args.py; they read as infinity,
# which `--busy-poll` then turned into an OverflowError traceback.
@pytest.mark.parametrize("text", ["", "soon", "10 parsecs", "-1s", "9" * 400 + "s", "1" + "0" * 310])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration_s(text)
