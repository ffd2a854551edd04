"""The JSON report: the findings as records a script reads without
parsing prose, each with the sentence the other formats print, and no
number JSON cannot hold."""

import json
from dataclasses import fields
from pathlib import Path

from corebench.analysis.analyse import analyse
from corebench.analysis.findings import KINDS, Findings
from corebench.report.data import ReportData
from corebench.report.json import VERSION, Json
from corebench.report.md import Markdown
from tests.analysis.test_finding import experiment_runs, runs_of
from tests.support.records import experiment, stored_run


def report_of(exp, runs) -> ReportData:
    found = analyse(exp, runs)
    return ReportData(**{f.name: getattr(found, f.name) for f in fields(Findings)}, store_path=Path("t.sqlite"))


def test_the_records_and_the_sentences_are_the_same_findings():
    d = report_of(*experiment_runs(0.8, thresholds={"rps": ">1500"}))
    doc = json.loads(Json().render(d))
    assert (doc["format"], doc["version"], doc["kinds"]) == ("corebench.findings", VERSION, list(KINDS))
    assert [f["sentence"] for f in doc["findings"]] == d.verdicts
    md = Markdown().render(d)
    assert all(f"- {s}" in md for s in d.verdicts), "the Markdown prints the same sentences"
    (worker,) = [f for f in doc["findings"] if f["subject"] == "mpm=worker against mpm=prefork"]
    assert worker["outcome"] == "lower on average" and worker["interval"]["high"] < 1
    assert worker["sentence"] == " ".join([worker["text"], *worker["caveats"]])
    (gate,) = [f for f in doc["findings"] if f["kind"] == "threshold"]
    assert gate["outcome"] == "fail" and {"name": "points failing", "value": 2.0, "unit": "count"} in gate["figures"]
    assert len(doc["points"]) == 6 and all(p["measured_runs"] == 4 for p in doc["points"])
    # Each point's diagnosis, as the Markdown's table gives it.
    for p, dg in zip(doc["points"], d.diagnoses, strict=True):
        assert (p["diagnosis"], p["diagnosis_evidence"]) == (dg.kind, dg.evidence) and dg.kind
        assert f" {dg.kind} |" in md, "the Markdown's Points table gives the same class"


def test_points_of_one_run_and_a_dead_one_write_null_not_nan():
    factors = {"mpm": ["prefork", "worker", "event"]}
    runs = runs_of({"mpm": "prefork"}, [1000.0]) + runs_of({"mpm": "worker"}, [1100.0])
    runs.append(stored_run({"mpm": "event"}, None, status="failed", seq=9, error="did not start"))
    text = Json().render(report_of(experiment(factors), runs))
    assert "NaN" not in text and "Infinity" not in text
    doc = json.loads(text)
    assert all(p["goodput_rps_ci"] is None for p in doc["points"])
    (dead,) = [p for p in doc["points"] if p["point"] == "mpm=event"]
    assert dead["goodput_rps_mean"] is None and dead["failing"] and dead["measured_runs"] == 0
    assert dead["diagnosis"] == "failing"
    (unranked,) = [f for f in doc["findings"] if "not ranked" in f["text"]]
    assert unranked["outcome"] == "not tested" and unranked["interval"] is None
