"""The combined effect of a factor over its matched comparisons (`pool`),
against scipy's one-sample t-test on the blocks' log ratios, which for two
levels is the paired t-test of Jain's two-factor design without
replication."""

import math

import numpy as np
import pytest
from scipy import stats as st

from corebench.analysis.effect import Effect
from corebench.analysis.pooled import pool, said


def comparisons(ratios, se=0.01, n=3):
    return [Effect(n, n, 1000.0, 1000.0 * r, se, 2 * n - 2) for r in ratios]


def test_the_combined_effect_is_the_paired_t_on_the_blocks_log_ratios():
    ratios = [1.10, 1.25, 1.18, 1.31]
    c = pool(comparisons(ratios))
    logs = np.log(ratios)
    ref = st.ttest_1samp(logs, 0.0).confidence_interval(0.95)
    assert c is not None and c.k == 4
    assert math.log(c.ratio) == pytest.approx(logs.mean())
    assert (math.log(c.low), math.log(c.high)) == pytest.approx((ref.low, ref.high))
    assert c.outcome == "higher on average"


def test_one_precise_comparison_does_not_carry_the_others():
    # Inverse-variance weights gave the comparison whose two runs happened
    # to agree almost all the weight: −8% here, against +20% in the three
    # noisier ones. Averaged as blocks, the estimate is their mean.
    es = [Effect(2, 2, 1000.0, 920.0, 0.002, 2)] + comparisons([1.2, 1.22, 1.18], se=0.08, n=2)
    c = pool(es)
    assert c is not None
    assert c.ratio == pytest.approx(math.exp(np.mean(np.log([0.92, 1.2, 1.22, 1.18]))))
    assert c.outcome == "inconclusive", "one block against three: the spread is the error"


def test_lines_held_together_widen_each_interval_by_bonferroni():
    ratios = [1.10, 1.25, 1.18, 1.31]
    one, three = pool(comparisons(ratios)), pool(comparisons(ratios), lines=3)
    assert one is not None and three is not None
    ref = st.ttest_1samp(np.log(ratios), 0.0).confidence_interval(1 - 0.05 / 3)
    assert (math.log(three.low), math.log(three.high)) == pytest.approx((ref.low, ref.high))
    assert three.low < one.low and three.interval().simultaneous_over == 3
    assert "simultaneous over 3 combined lines (Bonferroni)" in said(three)


def test_blocks_agreeing_beyond_their_runs_noise_keep_the_runs_noise():
    # Three identical ratios: a spread of 0 would claim an exact effect.
    c = pool(comparisons([1.02, 1.02, 1.02], se=0.03))
    assert c is not None
    half = st.t.ppf(0.975, 2) * math.sqrt(3 * 0.03**2) / 3
    assert math.log(c.high / c.ratio) == pytest.approx(half)
    assert c.outcome == "inconclusive"


def test_comparisons_significant_both_ways_give_no_one_effect():
    es = comparisons([1.5, 0.6, 1.4], se=0.02)
    assert [e.verdict for e in es] == ["higher", "lower", "higher"]
    c = pool(es)
    assert c is not None and c.outcome == "both ways" and c.interval() is None
    assert "they point both ways" in said(c) and "95% CI" not in said(c)


def test_all_higher_by_different_amounts_is_one_direction_not_a_disagreement():
    # Prefork against worker: each comparison higher, by +10% to +60%.
    c = pool(comparisons([1.1, 1.6, 1.3, 1.45], se=0.01))
    assert c is not None and c.outcome == "higher on average", said(c)
    assert "both ways" not in said(c) and "from +10.0% to +60.0%" in said(c)


def test_two_comparisons_are_not_combined():
    assert pool(comparisons([1.1, 1.2])) is None


def test_a_ratio_within_the_generators_ceilings_is_named():
    from dataclasses import replace

    from corebench.analysis.factor_effects import Compared, _ceiling_note
    from corebench.analysis.stats import summarize
    from tests.analysis.test_multiplicity import runs
    from tests.support.records import load_result, stored_run

    def near(levels, rps, ceiling):
        p = runs(levels, rps, [1.0, 1.1, 1.2])
        layout = {"generator_ceiling_rps": ceiling, "generator_ceiling_high_rps": ceiling}
        measured = [stored_run(levels, load_result(), layout=layout, seq=i) for i, _ in enumerate(rps, 1)]
        return replace(p, measured=measured, runs=measured, near_ceiling=True, goodput_rps=summarize(rps))

    h1 = near({"http": "1.1"}, [90_000.0, 91_000.0, 89_000.0], 115_712)
    h2 = near({"http": "2"}, [137_000.0, 138_000.0, 136_000.0], 148_740)
    note = _ceiling_note([Compared(h1, h2, comparisons([1.52])[0])])
    assert "(115,712 against 148,740 req/s, ×1.29, calibrated per protocol and page)" in note, note
    same = near({"http": "2"}, [95_000.0, 96_000.0, 94_000.0], 116_000)
    assert _ceiling_note([Compared(h1, same, comparisons([1.05])[0])]) == "", "ceilings 0.2% apart"
    assert _ceiling_note([Compared(replace(h1, near_ceiling=False), h2, comparisons([1.52])[0])]) == ""


def test_an_average_no_single_comparison_shows_says_so():
    # Each comparison inconclusive at the family's level (se large), their
    # average of six clear: "lower on average, though no single one shows it".
    es = [replace_family(e, 18) for e in comparisons([0.75, 0.8, 0.78, 0.82, 0.77, 0.79], se=0.08)]
    assert {e.verdict for e in es} == {"inconclusive"}
    c = pool(es, lines=2)
    assert c is not None and c.outcome == "lower on average"
    assert "lower on average, though no single comparison shows it" in said(c)
    assert "over their runs' noise, larger than their spread" in said(c), "the floor bound the error"
    assert "runs' noise (larger than their spread)" in c.interval().method


def test_an_inconclusive_average_says_what_it_could_detect():
    c = pool(comparisons([1.02, 0.97, 1.05, 0.99], se=0.05))
    assert c is not None and c.outcome == "inconclusive"
    from corebench.analysis.effect import detectable_shift

    se = max(np.std(np.log([1.02, 0.97, 1.05, 0.99]), ddof=1) / 2, math.sqrt(4 * 0.05**2) / 4)
    assert c.detectable == pytest.approx(math.expm1(detectable_shift(se, 3)))
    assert f"(the average could detect about ±{c.detectable:.0%}, 80% power)" in said(c)


def test_blocks_that_differ_beyond_their_noise_are_named():
    # −3% to +37% across pages whose runs agree within 1%: H far above 2.
    c = pool(comparisons([0.97, 1.05, 1.2, 1.37], se=0.02))
    assert c is not None and not c.both_ways, "−3% is not shown lower at se 0.02"
    assert c is not None and c.h > 2
    assert f"they vary {c.h:.1f}× more than their runs' noise allows (H, Higgins & Thompson 2002)" in said(c)
    assert "the average is not the effect at any one of them" in said(c)
    calm = pool(comparisons([1.1, 1.11, 1.09], se=0.05))
    assert calm is not None and calm.h < 2 and "Higgins" not in said(calm)


def replace_family(e, size):
    return e.in_family(size)


def test_every_average_of_a_report_counts_in_its_family():
    # Three blocks of mpm against prefork, each with the target's CPU per
    # request measured: two averages (throughput, CPU per request), so
    # each is held to α/2.
    from dataclasses import replace

    from corebench.analysis.factor_effects import combined, factor_rows
    from corebench.analysis.family import Family
    from tests.analysis.test_multiplicity import runs

    ps = []
    for c, base in ((1, 900.0), (2, 1700.0), (4, 3000.0)):
        for m, x in (("prefork", base), ("worker", base * 1.1)):
            p = runs({"cpus": c, "mpm": m}, [x * 0.98, x, x * 1.02], [5.0, 5.2, 4.8])
            ps.append(replace(p, demand_ms=[1.0 * (m == "worker") + 1.0, 1.02, 0.98]))
    factors = {"cpus": [1, 2, 4], "mpm": ["prefork", "worker"]}
    rows = factor_rows(ps, factors, set(), Family(ps, set()))
    assert combined(rows) == 2
    from corebench.analysis.verdict import verdicts

    (line,) = [v for v in verdicts(ps, factors=factors) if v.startswith("mpm=")]
    assert line.count("simultaneous over 2 combined lines (Bonferroni)") == 2, line


def test_an_average_against_the_one_comparison_shown_says_no_single_one_shows_it():
    # One comparison shown higher, the others at −20%: the average is lower,
    # and no comparison is shown lower.
    es = [e.in_family(9) for e in comparisons([1.3], se=0.02) + comparisons([0.8] * 8, se=0.12)]
    assert [e.verdict for e in es][:2] == ["higher", "inconclusive"]
    c = pool(es)
    assert c is not None and c.kind == "lower" and not c.both_ways
    assert "though no single comparison shows it" in said(c), said(c)
