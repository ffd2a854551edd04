"""`corebench load`: flags, the ab-compatible report, bad input, Ctrl-C."""

import json
import re
import signal
import subprocess
import time

import pytest

from corebench.testing import free_port
from tests.conftest import CLI, run_cli
from tests.support.load_threads import loading


def refused_url() -> str:
    return f"http://127.0.0.1:{free_port()}/"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["127.0.0.1:8080/"], "URL"),
        (["http://"], "URL"),
        (["ftp://127.0.0.1/"], "scheme"),
        (["http://no-such-host.invalid/"], "resolve"),
        (["-c", "10", "-n", "5", "http://127.0.0.1/"], "-c/--concurrency: 10 connections"),
        (["-c", "0", "http://127.0.0.1/"], "-c/--concurrency"),
        (["-c", "-3", "http://127.0.0.1/"], "-c/--concurrency"),
        (["-n", "0", "http://127.0.0.1/"], "-n/--requests"),
        (["-n", "-1", "http://127.0.0.1/"], "-n/--requests"),
        (["-t", "0s", "http://127.0.0.1/"], "-t/--duration"),
        (["-t", "soon", "http://127.0.0.1/"], "-t/--duration"),
        (["-s", "0", "http://127.0.0.1/"], "-s/--timeout"),
        (["-p", "/nonexistent/body", "http://127.0.0.1/"], "-p"),
        (["-H", "NoColon", "http://127.0.0.1/"], "-H"),
        (["-c", "many", "http://127.0.0.1/"], "-c"),
        (["--no-such-flag", "http://127.0.0.1/"], "no-such-flag"),
        (["http://192.0.2.1/"], "loopback"),
        (["--busy-poll", "1s", "http://127.0.0.1/"], "--busy-poll"),
        (["--busy-poll", "fast", "http://127.0.0.1/"], "--busy-poll"),
        (["--rate", "fast", "-t", "1s", "http://127.0.0.1/"], "--rate"),
        (["--rate", "0", "-t", "1s", "http://127.0.0.1/"], "--rate"),
        (["--rate", "10..100", "-t", "1s", "http://127.0.0.1/"], "--ramp"),
        (["--rate", "100", "--ramp", "5s", "-t", "1s", "http://127.0.0.1/"], "--ramp"),
        (["--rate", "100", "http://127.0.0.1/"], "need a duration or a request count"),
        (["--arrivals", "poisson", "-t", "1s", "http://127.0.0.1/"], "--arrivals"),
        (["--rate", "100", "--arrivals", "gamma", "-t", "1s", "http://127.0.0.1/"], "--arrivals"),
        (["--think", "1s", "-t", "1s", "http://127.0.0.1/"], "--users"),
        (["--users", "2", "--think", "2s..1s", "-t", "1s", "http://127.0.0.1/"], "think time"),
        (["--users", "2", "-c", "3", "-t", "1s", "http://127.0.0.1/"], "disagree"),
        (["--rate", "100", "--users", "2", "--think", "1s", "-t", "1s", "http://127.0.0.1/"], "think"),
        (["--urls", "/nonexistent/urls.txt"], "urls.txt"),
        (["--io", "fast", "http://127.0.0.1/"], "--io"),
        (["--io", "uring", "https://127.0.0.1/"], "--io: io_uring takes plain http:// URLs"),
        ([], "URL"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, fragment):
    p = run_cli("load", *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("corebench: error:") and fragment in lines[0], lines[0]
    assert p.stdout == ""


def test_unreadable_body_file(tmp_path):
    # A directory cannot be read as a body, even by root (chmod 0 would not stop root).
    p = run_cli("load", "-p", str(tmp_path), "http://127.0.0.1/")
    assert p.returncode == 2
    assert p.stderr.startswith(f"corebench: error: -p {tmp_path}: cannot read the body file")
    assert len(p.stderr.strip().splitlines()) == 1


def test_refused_port_is_measured_not_a_crash_and_not_a_success():
    p = run_cli("load", "-c", "2", "-n", "20", refused_url())
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("corebench: no request succeeded: 20 sent; connect: 20\n")
    assert "Complete requests:      20" in p.stdout
    assert "(Connect: 20, Receive: 0, Length: 0, Exceptions: 0)" in p.stdout
    # Every refusal reads the same: one sample line, with how many it stands for.
    samples = [line for line in p.stdout.splitlines() if line.startswith("Error sample:")]
    assert len(samples) == 1 and samples[0].endswith("(5 of the first 5 errors)"), samples
    # With the JSON on stdout, the line goes to stderr and the JSON stays whole.
    p = run_cli("load", "-c", "2", "-n", "20", "--json", "-", refused_url())
    assert p.returncode == 1 and json.loads(p.stdout)["failed"] == 20
    assert p.stderr.startswith("corebench: no request succeeded")


def test_a_server_answering_only_errors_is_not_a_success():
    from corebench.testing import MisbehavingServer

    with MisbehavingServer("status_500") as srv:
        p = run_cli("load", "-k", "-c", "2", "-n", "50", srv.url)
    assert p.returncode == 1 and p.stdout.startswith("corebench: no request succeeded: 50 sent; status 500: 50")


def test_ab_report_against_nginx(nginx):
    p = run_cli("load", "-k", "-c", "4", "-n", "400", nginx.url)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for label in (
        "Server Software:        nginx/",
        "Document Length:        44 bytes",
        "Concurrency Level:      4",
        "Complete requests:      400",
        "Failed requests:        0",
        "Keep-Alive requests:    400",
        "Requests per second:",
        "[#/sec] (mean)",
        "Time per request:",
        "(mean, across all concurrent requests)",
        "[Kbytes/sec] received",
        "Connection Times (ms)",
        "              min  mean[+/-sd] median   max",
        "Percentage of the requests served within a certain time (ms)",
        "(longest request)",
    ):
        assert label in out, label
    assert out.count("\nTotal:      ") == 1


def test_json_and_hgrm_outputs(nginx, tmp_path):
    hgrm = tmp_path / "lat.hgrm"
    p = run_cli("load", "-k", "-c", "2", "-n", "300", "--json", "-", "--hgrm", str(hgrm), nginx.url)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["schema"] == "corebench.load/1"
    assert r["responses"] == 300 and r["status_counts"] == {"200": 300}
    assert r["latency_us"]["total"]["count"] == 300
    assert r["latency_us"]["total"]["spectrum"][-1]["total_count"] == 300
    assert sum(s["completed"] for s in r["timeline"]) == 300
    text = hgrm.read_text()
    assert text.startswith("       Value     Percentile TotalCount 1/(1-Percentile)")
    assert "#[Max     =" in text and "Total count    =          300]" in text


def test_ctrl_c_prints_what_was_measured(nginx):
    proc = subprocess.Popen(
        CLI + ["load", "-k", "-c", "2", "-t", "60s", nginx.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # After the load began: a signal during the interpreter's start (a
    # second or more on a busy machine) would test Python, not corebench.
    assert loading(proc) is not None, proc.communicate()
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "Complete requests:" in out and "Interrupted:" in out
    secs = float(out.split("Time taken for tests:")[1].split()[0])
    assert secs < 30


def test_post_body_and_headers(nginx, tmp_path):
    body = tmp_path / "body.json"
    body.write_text('{"a": 1}')
    # nginx answers 405 to a POST on a static file: counted as ab counts it
    # (a non-2xx response), and since nothing succeeded, said first, exit 1.
    p = run_cli("load", "-n", "3", "-p", str(body), "-T", "application/json", "-H", "X-Test: 1", nginx.url)
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("corebench: no request succeeded: 3 sent; status 405: 3")
    assert "Non-2xx responses:      3" in p.stdout and "Total body sent:" in p.stdout


def test_users_with_think_time_print_siege_summary(nginx):
    p = run_cli("load", "--users", "3", "--think", "20ms..40ms", "-t", "1s", "-k", nginx.url)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for label in (
        "siege summary",
        "Transactions:",
        "Availability:",
        "Elapsed time:",
        "Data transferred:",
        "Response time:",
        "Transaction rate:",
        "Throughput:",
        "Concurrency:",
        "Successful transactions:",
        "Failed transactions:",
        "Longest transaction:",
        "Shortest transaction:",
    ):
        assert label in out, label
    assert "Users:                  3" in out and "Concurrency Level" not in out, "users are not ab's concurrency"
    assert "(mean response time)" in out
    hits = int(out.split("Transactions:")[1].split()[0])
    # 3 users pausing 20-40 ms for 1 s: at most 3 * (1 / 0.02 + 1) requests.
    assert 3 <= hits <= 153, hits


def test_rate_reports_its_schedule(nginx):
    p = run_cli("load", "--rate", "200", "-t", "1s", "-k", nginx.url, "--json", "-")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["model"] == "rate" and r["schedule"]["sent"] == 200 and r["schedule"]["kept"]
    assert r["latency_us"]["uncorrected"]["count"] == 200


def test_poisson_arrivals_are_said_and_counted(nginx):
    # 400/s for 2 s: a Poisson count of mean 800 (sd 28), and nginx sees each.
    before = nginx.served()
    p = run_cli("load", "--rate", "400", "--arrivals", "poisson", "-t", "2s", "-k", nginx.url, "--json", "-")
    r = json.loads(p.stdout)
    assert p.returncode == 0 and r["rate"]["arrivals"] == "poisson"
    assert abs(r["schedule"]["sent"] - 800) < 6 * 28 and nginx.served_since(before) == r["requests"]
    text = run_cli("load", "--rate", "100", "--arrivals", "poisson", "-t", "0.5s", "-k", nginx.url).stdout
    assert "Poisson arrivals" in text
    # An open loop's connections bound the load, they do not set it: not ab's Concurrency Level.
    assert "Connections (at most):  1000 (open loop" in text and "Concurrency Level" not in text
    assert "(mean response time)" in text


def test_url_file_in_siege_format(nginx, tmp_path):
    body = tmp_path / "body.txt"
    body.write_text("a=1")
    urls = tmp_path / "urls.txt"
    urls.write_text(f"# pages\n{nginx.url}\n/page.html?x=1\n\n/page.html POST <{body.name}\n")
    p = run_cli("load", "--urls", str(urls), nginx.url, "-n", "30", "-c", "3", "-k", "--json", "-")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert sorted((u["method"], u["target"], u["responses"] + u["errors"]) for u in r["urls"]) == [
        ("GET", "/page.html", 10),
        ("GET", "/page.html?x=1", 10),
        ("POST", "/page.html", 10),
    ]
    # nginx does not take POST on a static file: 405, counted per URL.
    post = next(u for u in r["urls"] if u["method"] == "POST")
    assert list(post["status_seen"]) == ["405"]


def _limited(args: list[str], soft: int, hard: int, timeout: float) -> subprocess.CompletedProcess:
    """corebench with an open-file limit of its own."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return subprocess.run(CLI + args, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)


def test_connections_beyond_the_descriptor_limit_are_refused_at_once(nginx):
    start = time.monotonic()
    p = _limited(["load", "-c", "2000", "-t", "2s", "-k", nginx.url], 1024, 1024, timeout=30)
    assert p.returncode == 2 and time.monotonic() - start < 10
    assert p.stderr.startswith("corebench: error: -c/--concurrency: 2,000 connections need about 2,")
    assert "this process may open 1,024 (ulimit -n)" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    # Spread over a cluster's agents, the connections are not this process's to count.
    p = _limited(["load", "-c", "2000", "-t", "2s", "-k", "--ray", "127.0.0.1:9", nginx.url], 1024, 1024, timeout=60)
    assert p.returncode == 2 and "file descriptors" not in p.stderr and "--ray 127.0.0.1:9" in p.stderr


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one(nginx):
    p = _limited(["load", "-c", "1500", "-n", "3000", "-k", nginx.url], 1024, 8192, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Complete requests:      3000" in p.stdout and "Failed requests:        0" in p.stdout


def test_version():
    import corebench
    from corebench import _engine

    why = _engine.io_uring_unavailable()
    for flag in ("--version", "-V"):
        p = run_cli(flag)
        assert p.returncode == 0 and p.stdout.startswith(f"corebench {corebench.__version__} (Python ")
        io = "io_uring (the default) and epoll" if why is None else f"epoll (io_uring unavailable: {why})"
        assert f"\nLoad I/O: {io}\n" in p.stdout, p.stdout


@pytest.mark.parametrize("io", ["epoll", "uring"])
def test_each_transport_counts_what_nginx_counts_and_names_itself(nginx, io):
    from corebench import _engine

    if io == "uring" and (why := _engine.io_uring_unavailable()):
        pytest.skip(f"io_uring unavailable here: {why}")
    before = nginx.served()
    p = run_cli("load", "-k", "-c", "8", "-n", "3000", "--io", io, "--json", "-", nginx.url)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    name = {"epoll": "epoll", "uring": "io_uring"}[io]
    assert r["io"] == name and r["responses"] == 3000 and r["failed"] == 0
    assert nginx.served_since(before) == 3000
    text = run_cli("load", "-k", "-c", "2", "-n", "100", "--io", io, nginx.url).stdout
    assert re.search(rf"\d+ threads? on {name}\)", text), text


def test_the_generator_warns_when_it_may_have_been_the_limit(capsys):
    from types import SimpleNamespace

    from corebench.cli.common import _watch_generator

    def run(cpu_s, threads=8, busy_poll_us=0, duration_s=10.0, successes=100):
        r = SimpleNamespace(
            agents=[],
            duration_s=duration_s,
            threads=threads,
            generator_cpu_s=cpu_s,
            busy_poll_us=busy_poll_us,
            successes=successes,
        )
        _watch_generator(r)
        return capsys.readouterr().err

    # The case: 7.58 of a core over the run with 8 threads.
    assert run(75.8).startswith("corebench: warning: the generator used 7.58 of the 8 cores its threads can use (95%)")
    assert run(40.0) == "" and run(75.8, busy_poll_us=20) == ""
    # A run of a millisecond (`-n 1`) is its threads' start: no warning.
    assert run(0.0009, threads=1, duration_s=0.001) == ""
    assert run(0.095, threads=1, duration_s=0.1).startswith("corebench: warning: the generator used 0.95 of the 1")
    # Nothing succeeded (a refused port): the generator was busy failing, no server's limit to warn of.
    assert run(75.8, successes=0) == ""


def test_http2_multiplexes_and_says_so(nginx):
    before = nginx.served()
    p = run_cli("load", "--http2", "-c", "4", "--streams", "25", "-n", "5000", nginx.h2_url)
    assert p.returncode == 0, p.stderr
    assert nginx.served_since(before) == 5000
    assert "Concurrency Level:      100 (4 connections × 25 streams)" in p.stdout, p.stdout
    assert "Complete requests:      5000" in p.stdout and "Failed requests:        0" in p.stdout
    assert "HTTP/2:                 25 streams per connection asked, at most 25 in flight on one; 4 connections" in (
        p.stdout
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--streams", "8"], "--streams: concurrent streams on a connection need HTTP/2"),
        (["--http1.0", "--http2"], "--http1.0 and --http2 ask for two protocols: give one"),
        (["--http2", "--streams", "0"], "--streams: Input should be greater than or equal to 1"),
        (["--http2", "--io", "uring"], "--io: HTTP/2 runs on epoll"),
    ],
)
def test_http2_settings_are_refused_in_one_line(args, says):
    p = run_cli("load", "-n", "10", *args, "http://127.0.0.1:9/")
    assert p.returncode == 2 and p.stdout == "", p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], p.stderr


def test_http2_to_a_server_without_it_is_refused_in_one_line(nginx):
    before = nginx.served()
    p = run_cli("load", "--http2", "-n", "10", nginx.url)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == (
        'corebench: error: --http1.0/--http2: the server answered the HTTP/2 preface in HTTP/1.x ("HTTP/1.1 400 Bad '
        'Request"): it does not speak h2c; drop HTTP/2, or enable it on the server'
    )
    # The check's one connection sent nginx a preface, which it counted as a request.
    assert nginx.served_since(before) == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--threads", "0"], "--threads: 0 threads: give 1 or more (leave it out for one per available CPU)"),
        (["-n", "100000000000000000000000"], "-n/--requests: 100,000,000,000,000,000,000,000 requests is more than"),
    ],
)
def test_counts_the_engine_would_misread_are_refused_in_one_line(args, says):
    p = run_cli("load", *args, "http://127.0.0.1:9/")
    assert p.returncode == 2 and p.stdout == "", p.stdout
    (line,) = p.stderr.strip().splitlines()
    assert says in line and "serde" not in line and "u64" not in line, line
