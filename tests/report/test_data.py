"""The report's sentences about how the load was made, in words a reader
can take at face value."""

from collections import Counter

from corebench.report.data import _io_said


def test_which_transport_the_runs_loaded_on_is_counted_in_runs():
    assert _io_said(Counter({"io_uring": 12})) == "all 12 measured runs ran their load threads on io_uring"
    assert _io_said(Counter({"epoll": 1})) == "the measured run ran its load threads on epoll"
    mixed = Counter({"io_uring": 2, "epoll": 10})
    assert _io_said(mixed) == "of the measured runs, 10 ran their load threads on epoll and 2 on io_uring"
