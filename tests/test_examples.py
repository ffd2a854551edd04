"""Each example's README quotes a recorded run: its store is committed
beside the plan (`recorded.sqlite.xz`), and the figures the README gives
for that session must be what today's analysis says of it. A change to a
method that moves a quoted figure fails here until the README says the new
one (the demo's figures are rerun live in test_readme.py)."""

import lzma
import shutil
from pathlib import Path

import pytest

from corebench.analysis.slo import parse_slo
from corebench.report import data
from corebench.report.md import Markdown

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# What each README quotes of its recorded session, as the report prints it.
QUOTED: dict[str, tuple[str | None, list[str]]] = {
    "cores-worth-it": (
        None,
        [
            "+90.2%",
            "+89.6%",
            "+88.2%",
            "+87.8% to +92.6%",
            "+88.1% to +91.0%",
            "+78.9% to +98.0%",
            "1.036 → 1.031 ms",
            "2.01×",
            "1.98–2.04×",
            "measured 1.90×",
            "1.88×",
        ],
    ),
    "prefork-vs-worker": (
        None,
        [
            "−11.3%",
            "−26.4% to +6.9%",
            "from −26.4% to +1.2%",
            "−22.6%",
            "−36.4% to −5.7%",
            "from −34.7% to −14.3%",
            "+27.3%",
            "+8.3% to +49.6%",
            "+63.5%",
            "+38.1% to +93.6%",
            "factor of 3.3 either way",
            "7 of 54 measured runs",
        ],
    ),
    "realistic-vs-benchmark": (
        None,
        [
            "+11.7%",
            "−12.0% to +41.7%",
            "from −3.1% to +37.2%",
            "about ±36%",
            "+6.9%",
            "−15.5% to +35.2%",
            "−9.5%",
            "−23.3% to +6.9%",
        ],
    ),
    "shared-server": (
        None,
        [
            "−5.3%",
            "−24.4% to +18.6%",
            "−21.3% to +23.4%",
            "−21.4% to +23.3%",
            "+13.5%",
            "−8.7% to +41.0%",
            "+6.3%",
            "−20.4% to +42.0%",
            "0.0038",
        ],
    ),
    "optimal-vcpu": (
        "p99<50ms",
        [
            "−3.0%",
            "−8.1% to +2.3%",
            "about ±31%",
            "+37.1%",
            "+23.1% to +52.6%",
            "0.78 ± 0.19 ms against 0.74 ± 0.56 ms",
            "−66.4%",
            "−86.7% to −15.4%",
            "22.08 ms",
            "8.64 ms",
        ],
    ),
}


def flat(text: str) -> str:
    """Line breaks and runs of spaces as one space, as a wrapped README reads."""
    return " ".join(text.split())


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_a_readme_quotes_what_its_recorded_store_says(name, tmp_path):
    slo, figures = QUOTED[name]
    store = tmp_path / "recorded.sqlite"
    with lzma.open(EXAMPLES / name / "recorded.sqlite.xz") as src, store.open("wb") as out:
        shutil.copyfileobj(src, out)
    report = flat(Markdown().render(data.load(store, slo=parse_slo(slo) if slo else None)))
    readme = flat((EXAMPLES / name / "README.md").read_text())
    assert "recorded.sqlite.xz" in readme
    for figure in figures:
        assert figure in readme, f"{name}: the README no longer quotes {figure!r}"
        assert figure in report, f"{name}: the README quotes {figure!r}; the recorded store's report does not say it"
