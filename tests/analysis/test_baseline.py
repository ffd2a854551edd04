"""The CPU baseline's speedup from stored hackbench times, and the server's
beside it, on figures whose answer is known."""

import pytest

from corebench.analysis.baseline import rows, sentence, server_speedup
from corebench.analysis.scaling import ScalingRow, scaling_table
from corebench.store import Baseline

FOUND = Baseline.model_validate(
    {
        "argv": ["hackbench", "-g", "10", "-l", "1000"],
        "levels": [
            {"cpus": 2, "target_cpus": [0, 1], "seconds": [5.0, 5.4, 5.2], "error": None},
            {"cpus": 1, "target_cpus": [0], "seconds": [10.0, 9.0, 11.0], "error": None},
            {"cpus": 4, "target_cpus": [0, 1, 2, 3], "seconds": [], "error": "hackbench exited with status 1: x"},
        ],
    }
)


def test_speedup_is_the_ratio_of_median_times_over_the_fewest_cpus():
    table = rows(FOUND)
    assert [r.cpus for r in table] == [1, 2, 4]
    assert table[0].speedup == 1.0 and table[1].speedup == pytest.approx(10.0 / 5.2)
    assert [r.ideal for r in table] == [1, 2, 4]
    assert table[2].speedup is None and table[2].median_s is None and "status 1" in table[2].error


def test_the_server_is_put_beside_it():
    # 1,000 req/s at 1 cpu, 1,600 at 2: the server's speedup 1.6.
    scaling = scaling_table([("cpus=1", 1, 1000.0, None), ("cpus=2", 2, 1600.0, None)], 1000.0)
    assert server_speedup(scaling, 2) == pytest.approx(1.6)
    line = sentence(FOUND, scaling)
    assert line == (
        "CPU baseline (hackbench -g 10 -l 1000, median of 3 run(s) per level, speedup over cpus=1): "
        "1.92x at cpus=2 (ideal 2.00x), the server 1.60x (means; 83% of the baseline's); "
        "cpus=4: not measured (hackbench exited with status 1: x)."
    )


def test_nothing_to_compare_says_nothing():
    assert sentence(None, []) is None and rows(None) == []
    one = Baseline.model_validate(
        {"argv": ["hackbench"], "levels": [{"cpus": 1, "target_cpus": [0], "seconds": [1.0], "error": None}]}
    )
    assert sentence(one, []) is None
    unlimited = Baseline.model_validate(
        {"argv": ["hackbench"], "levels": [{"cpus": None, "target_cpus": [0, 1], "seconds": [1.0], "error": None}]}
    )
    assert rows(unlimited) == []


def test_the_servers_speedup_beside_the_baseline_skips_rows_whose_rate_the_load_set():
    import math

    think = [ScalingRow("think=1s cpus=1", 1, 25.0, math.nan, math.nan, None, at="think=1s"),
             ScalingRow("think=1s cpus=2", 2, 25.0, math.nan, math.nan, None, at="think=1s")]  # fmt: skip
    flat = [ScalingRow("think=0 cpus=1", 1, 1000.0, 1.0, 1.0, None, at="think=0"),
            ScalingRow("think=0 cpus=2", 2, 1600.0, 1.6, 0.8, None, at="think=0")]  # fmt: skip
    assert server_speedup(think + flat, 2) == pytest.approx(1.6)
    assert server_speedup(think, 2) is None
