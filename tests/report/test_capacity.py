"""The capacity search's HTML report names what it loaded, escaped."""

from corebench.report.capacity import html
from corebench.store import Capacity


def test_the_capacity_report_names_its_target_escaped():
    c = Capacity(objective="p99<=20ms", arrivals="poisson", precision=0.02, outcome="interrupted", steps=[])
    page = html(c, None, "http://127.0.0.1:8080/q?<script>")
    assert "Target: <code>http://127.0.0.1:8080/q?&lt;script&gt;</code>" in page
    assert "<title>corebench capacity: p99&lt;=20ms, http://127.0.0.1:8080/q?&lt;script&gt;</title>" in page
    assert "Search interrupted after 0 whole step(s)" in page
