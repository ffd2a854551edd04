"""ab's layout, line by line, and its SANE() warnings."""

from corebench.output.text import _ROW, _round_ms, _sane


def test_rounding_is_abs():
    assert [_round_ms(x) for x in (0, 499, 500, 1499, 1500)] == [0, 0, 1, 1, 2]


def test_row_format_matches_ab():
    # ab 2.3: "Connect:        0    0   0.0      0       0"
    assert "Connect:    " + _ROW.format(0, 0, 0.0, 0, 0) == "Connect:        0    0   0.0      0       0"


def test_sane_warnings():
    assert _sane("the total time", 10, 10, 1.0) == []
    assert _sane("the total time", 12, 10, 1.5)[0].startswith("WARNING: The median and mean for the total time")
    assert _sane("the total time", 20, 10, 1.0)[0].startswith("ERROR: The median and mean")
