"""ab's -e file, row by row, from ab's own index formula."""

import random

from corebench.output.abcsv import AbCsv
from tests.output.hdr import histogram, result, summary


def ab_rows(values: list[int]) -> list[str]:
    """support/ab.c, over the sorted times, clamped where ab reads past its list."""
    s, n = sorted(values), len(values)
    rows = ["Percentage served,Time in ms"]
    for i in range(101):
        t = s[0] if i == 0 else s[-1] if i == 100 else s[min(int(0.5 + n * i / 100.0), n - 1)]
        rows.append(f"{i},{t / 1000.0:.3f}")
    return rows


def test_rows_follow_abs_formula_exactly_below_2ms():
    # Below 2,048 µs the histogram keeps every microsecond: the file is ab's to the digit.
    rng = random.Random(7)
    for n in (1, 2, 5, 49, 50, 101, 1000):
        values = [rng.randint(40, 2047) for _ in range(n)]
        text = AbCsv().render(result(summary(values)), None)
        assert text.splitlines() == ab_rows(values), n


def test_rows_above_2ms_are_the_histograms_values():
    rng = random.Random(8)
    values = [int(rng.expovariate(1 / 50_000)) + 1 for _ in range(3000)]
    h = histogram(values)
    got = AbCsv().render(result(summary(values)), None).splitlines()
    want = ab_rows([h.get_highest_equivalent_value(v) for v in values])
    # Rows 0 and 100 are the summary's min and max (lowest and highest equivalents).
    assert got[2:-1] == want[2:-1]
    assert got[1] == f"0,{h.get_min_value() / 1000:.3f}" and got[-1] == f"100,{h.get_max_value() / 1000:.3f}"


def test_a_run_without_responses_has_the_header_only():
    assert AbCsv().render(result(summary([])), None) == "Percentage served,Time in ms\n"
