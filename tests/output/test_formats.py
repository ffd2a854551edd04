"""One small interface, one file per format: every format module holds one
class with a name and render(), and output.get() knows each of them."""

import importlib
import inspect
import pkgutil
import re

import corebench.output as output


def test_one_format_per_file_and_each_registered():
    found = {}
    for info in pkgutil.iter_modules(output.__path__):
        module = importlib.import_module(f"corebench.output.{info.name}")
        classes = [
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if c.__module__ == module.__name__ and hasattr(c, "render") and isinstance(getattr(c, "name", None), str)
        ]
        assert len(classes) <= 1, f"{info.name} holds {len(classes)} formats"
        if classes:
            found[classes[0].name] = classes[0]
    assert {"text", "json", "hgrm", "siege", "csv", "gnuplot", "html", "wrk-latency", "verbose"} <= set(found)
    for name, cls in found.items():
        assert isinstance(output.get(name), cls), name


def test_html_connection_times_use_abs_arithmetic():
    from corebench.output.abhtml import _connection_times
    from tests.output.hdr import summary

    connect = summary([400, 600, 1600])  # sum 2.6 ms -> 3 (rounded), / 3 = 1
    total = summary([1400, 2600, 5200])  # sum 9.2 ms -> 9, / 3 = 3
    rows = _connection_times(connect, total)
    cells = [[int(c) for c in re.findall(r"<td bgcolor=white> *(\d+)</td>", row)] for row in rows[2:]]
    assert cells == [[0, 1, 2], [1 - 0, 3 - 1, 5 - 2], [1, 3, 5]]
