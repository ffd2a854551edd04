"""The report's sentences about how the load was made, in words a reader
can take at face value."""

from collections import Counter

from corebench.analysis.lines import io_said as _io_said
from corebench.report.data import RunFigures
from tests.output.test_siege import _result, _summary
from tests.report.test_anova_report import report
from tests.support.records import stored_run


def test_which_transport_the_runs_loaded_on_is_counted_in_runs():
    assert _io_said(Counter({"io_uring": 12})) == "all 12 measured runs ran their load threads on io_uring"
    assert _io_said(Counter({"epoll": 1})) == "the measured run ran its load threads on epoll"
    mixed = Counter({"io_uring": 2, "epoll": 10})
    assert _io_said(mixed) == "of the measured runs, 10 ran their load threads on epoll and 2 on io_uring"


def test_the_runs_table_counts_failures_as_the_analysis_does():
    # 700 answered 200 and 300 answered 503 in 2 s: 350 req/s, 300 failed;
    # the store's columns keep ab's counts (every response, errors only).
    mixed = _result(
        requests=1000, responses=1000, status={200: 700, 503: 300}, body=0, duration_s=2.0, total=_summary(1000)
    )
    run = stored_run({}, mixed)
    assert run.throughput_rps == mixed.throughput_rps and mixed.failed == 0
    assert report(0.0).run_figures(run) == RunFigures(350.0, 300)
    # A run that stored no result (its target failed to start): its columns as stored.
    assert report(0.0).run_figures(stored_run({}, None, status="failed")) == RunFigures(None, None)
