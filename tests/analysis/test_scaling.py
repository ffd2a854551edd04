"""Scaling laws against published fits, and the first field report's table."""

import csv

import pytest

from corebench.analysis.scaling import fit, scaling_table
from tests.conftest import SCALING_DATA, run_cli

DATA = SCALING_DATA


def table(name):
    rows = list(csv.reader((DATA / f"{name}.csv").read_text().splitlines()))[1:]
    return [float(a) for a, _ in rows], [float(b) for _, b in rows]


def close(a, b, rel=0.001):
    return a == b == 0 or abs(a - b) <= rel * abs(b)


def test_usl_reproduces_specsdm91():
    f = fit(*table("specsdm91"))
    for k, published in {"lambda": 89.9952, "sigma": 0.0277285, "kappa": 0.000104365}.items():
        assert close(f.params[k], published), (k, f.params[k], published)
    assert close(f.peak_n, 96.5, rel=0.002)


def test_usl_reproduces_raytracer():
    f = fit(*table("raytracer"))
    assert close(f.params["lambda"], 21.8488) and close(f.params["sigma"], 0.0578)
    assert f.params["kappa"] == 0 and f.peak_n is None, "Amdahl-like: no finite peak"
    lo, hi = f.intervals["sigma"]
    assert lo < 0.0578 < hi


def test_predictions_and_amdahl():
    ns, xs = table("specsdm91")
    f = fit(ns, xs, "usl", [300.0])
    assert f.predictions[300.0] == pytest.approx(f.predict(300.0)) and f.predictions[300.0] < f.peak_x
    a = fit(ns, xs, "amdahl")
    assert set(a.params) == {"lambda", "sigma"} and a.r2 < f.r2


def test_first_field_report_efficiency_table_and_speedup():
    # "Are the Cores Worth It?": requests per second and clock rates.
    e5310, x5130 = 332, 404
    rows = scaling_table(
        [("E5310 1 core", 1, 332, 1.6), ("E5310 4 cores", 4, 1128, 1.6), ("E5310 8 cores", 8, 2104, 1.6)], e5310
    )
    rows += scaling_table([("5130 1 core", 1, 404, 2.0), ("5130 4 cores", 4, 1356, 2.0)], x5130)
    per_ghz = {r.label: round(r.per_core_ghz) for r in rows}
    assert per_ghz == {
        "E5310 1 core": 208,
        "E5310 4 cores": 176,
        "E5310 8 cores": 164,
        "5130 1 core": 202,
        "5130 4 cores": 170,
    }
    speed = {r.label: r.speedup for r in rows}
    assert f"{speed['E5310 8 cores']:.1f}" == "6.3" and f"{speed['E5310 4 cores']:.1f}" == "3.4"
    assert rows[2].efficiency == pytest.approx(2104 / (8 * 332))


def test_fit_command(tmp_path):
    p = run_cli("fit", str(DATA / "specsdm91.csv"), "--json")
    assert p.returncode == 0, p.stderr
    import json

    g = json.loads(p.stdout)["groups"][""]
    assert g["law"] == "usl" and close(g["fits"]["usl"]["params"]["lambda"], 89.9952)
    text = run_cli("fit", str(DATA / "raytracer.csv"), "--predict", "128").stdout
    assert "Amdahl's law over 11 levels" in text and "X(128) =" in text
    p = run_cli("fit", str(DATA / "raytracer.csv"), "--predict", "129")
    assert p.returncode == 2 and "beyond twice the largest measured N (64)" in p.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("n,x\n1,10\n2,abc\n")
    p = run_cli("fit", str(bad))
    assert p.returncode == 2 and "bad.csv:3:" in p.stderr
    for word in ("nan", "inf", "-inf"):  # no measurement: refused where it stands, not fitted
        bad.write_text(f"n,x\n1,10\n2,{word}\n3,30\n")
        p = run_cli("fit", str(bad))
        assert p.returncode == 2 and "bad.csv:3:" in p.stderr and "give numbers" in p.stderr, p.stderr


FIELD_REPORT = (
    "cpu,cores,ghz,rps\nE5310,1,1.6,332\n5130,1,2.0,404\nE5310,4,1.6,1128\n5130,4,2.0,1356\nE5310,8,1.6,2104\n"
)


def test_fit_command_reproduces_the_first_field_reports_table(tmp_path):
    table = tmp_path / "cores.csv"
    table.write_text(FIELD_REPORT)
    p = run_cli("fit", str(table))
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if line.startswith(("E5310 ", "5130 "))]
    per_ghz = {(r[0], r[1]): int(r[-1]) for r in rows}
    assert per_ghz == {
        ("E5310", "1"): 208,
        ("5130", "1"): 202,
        ("E5310", "4"): 176,
        ("5130", "4"): 170,
        ("E5310", "8"): 164,
    }
    speedup = {(r[0], r[1]): r[3] for r in rows}
    assert speedup[("E5310", "8")] == "6.34×" and speedup[("E5310", "4")] == "3.40×"
    assert "one group per cpu" in p.stdout and "the USL not tried: it needs 5 levels" in p.stdout


def test_fit_command_reads_named_columns_in_any_format(tmp_path):
    tsv = tmp_path / "t.tsv"
    tsv.write_text("label\tthreads\treq_per_s\tclock_mhz\na\t1\t100\t2000\na\t2\t190\t2000\na\t4\t350\t2000\n")
    p = run_cli("fit", str(tsv), "--x", "threads", "--y", "req_per_s", "--json")
    assert p.returncode == 0, p.stderr
    import json

    out = json.loads(p.stdout)
    assert (out["x"], out["y"], out["clock"], out["by"]) == ("threads", "req_per_s", "clock_mhz", "label")
    assert out["groups"]["a"]["rows"][0]["per_core_ghz"] == pytest.approx(50.0)
    js = tmp_path / "t.json"
    js.write_text('[{"vcpus": 1, "throughput": 10}, {"vcpus": 2, "throughput": 20}]')
    assert '"law": "linear"' in run_cli("fit", str(js), "--json").stdout
    p = run_cli("fit", str(tsv))
    assert p.returncode == 2
    assert p.stderr.strip().endswith("its columns: label, threads, req_per_s, clock_mhz; choose one with --x NAME")
    p = run_cli("fit", str(tsv), "--x", "threads", "--y", "nope")
    assert p.returncode == 2 and "--y nope: " in p.stderr and "has no such column" in p.stderr


def test_fit_command_takes_the_latency_form_through_littles_law(tmp_path):
    # Only concurrency and mean latency known (usl4j's case): X = N / R.
    import json

    import numpy as np

    from corebench.analysis.scaling import usl

    n = np.array([1, 2, 4, 8, 16, 32, 64])
    r_ms = n / usl(n, 100, 0.05, 0.001) * 1000
    table = tmp_path / "lat.csv"
    table.write_text("clients,latency_ms\n" + "".join(f"{a},{float(b)!r}\n" for a, b in zip(n, r_ms, strict=True)))
    p = run_cli("fit", str(table), "--json")
    assert p.returncode == 0, p.stderr
    usl_fit = json.loads(p.stdout)["groups"][""]["fits"]["usl"]["params"]
    assert usl_fit["lambda"] == pytest.approx(100, rel=1e-4) and usl_fit["sigma"] == pytest.approx(0.05, rel=1e-3)
    assert usl_fit["kappa"] == pytest.approx(0.001, rel=1e-3)
    assert "X = N / latency_ms (Little's law, closed loop)" in run_cli("fit", str(table)).stdout


def test_fit_refuses_a_zero_throughput_at_the_lowest_n_in_one_line(tmp_path):
    table = tmp_path / "zero.csv"
    table.write_text("cpus,throughput\n1,0\n2,0\n4,0\n")
    p = run_cli("fit", str(table))
    assert p.returncode == 2 and p.stdout == "", p.stdout
    (line,) = p.stderr.splitlines()
    assert line.startswith(f"corebench: error: {table}: the throughput at the lowest N (1) is 0: speedups"), line
