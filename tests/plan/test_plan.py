"""Plans: factors, placeholders, and errors that name file, line and key."""

import pytest

from corebench.errors import UsageError
from corebench.plan import load_plan
from corebench.plan.factors import levels, substitute

GOOD = """\
[experiment]
repetitions = 3
warmup = 1
duration = "2s"

[factors]
cpus = [1, 2]
concurrency = "25..75:25"

[target]
builtin = { model = "prefork" }

[load]
path = "/dynamic?work_us=1000"
concurrency = "{concurrency}"
"""


def write(tmp_path, text):
    p = tmp_path / "plan.toml"
    p.write_text(text)
    return p


def test_factorial_with_ranges_and_placeholders(tmp_path):
    exp = load_plan(write(tmp_path, GOOD))
    assert exp.factors == {"cpus": [1, 2], "concurrency": [25, 50, 75]}
    assert len(exp.points) == 6
    p = exp.points[-1]
    assert (p.levels, p.load.concurrency, p.target.cpus) == ({"cpus": 2, "concurrency": 75}, 75, 2.0)
    # cpus limits the target (implicitly), concurrency only the load.
    assert exp.target_factors == {"cpus"}
    assert exp.plan.experiment.duration_s == 2.0


def test_levels_and_substitution():
    assert levels("c", "1..2:0.5") == [1.0, 1.5, 2.0]
    assert levels("c", "5..5") == [5]
    assert levels("m", ["prefork", "worker"]) == ["prefork", "worker"]
    for bad in ("10..1", "1..5:0", [], {"a": 1}):
        with pytest.raises(ValueError):
            levels("c", bad)
    assert substitute({"a": "{n}", "b": "x{n}y", "c": ["{n}"]}, {"n": 3}) == {"a": 3, "b": "x3y", "c": [3]}


def test_geometric_ranges_fit_any_machine():
    # 5 cpus levels on 16 CPUs instead of 16; the machine's own count is kept.
    assert levels("cpus", "1..max:x2", max_cpus=16) == [1, 2, 4, 8, 16]
    assert levels("cpus", "1..max:x2", max_cpus=12) == [1, 2, 4, 8, 12]
    assert levels("cpus", "1..max:x2", max_cpus=1) == [1]
    assert levels("c", "1..1000:x10") == [1, 10, 100, 1000]
    assert levels("c", "1..50:x10") == [1, 10], "a number end is a bound, not a level"
    for bad in ("0..8:x2", "1..8:x1", "8..1:x2"):
        with pytest.raises(ValueError, match="grow by a factor above 1"):
            levels("c", bad)


@pytest.mark.parametrize(
    "change, expected",
    [
        (("repetitions = 3", "repetitons = 3"), "plan.toml:2: experiment.repetitons: unknown key (a typo?)"),
        (("warmup = 1", 'warmup = "one"'), "plan.toml:3: experiment.warmup: give warm-up runs as a number"),
        (("repetitions = 3", 'repetitions = "many"'), "plan.toml:2: experiment.repetitions: give a number of"),
        (("repetitions = 3", "repetitions = 0"), "plan.toml:2: experiment.repetitions: give 1 to 1000"),
        (
            ("repetitions = 3", 'repetitions = "auto"\nschedule = "blocked"'),
            'plan.toml:1: experiment: repetitions = "auto" adds whole rounds: it needs schedule = "interleaved"',
        ),
        (("repetitions = 3", "repetitions = 3\nprecision = 0.05"), "plan.toml:1: experiment: precision belongs to"),
        (("repetitions = 3", 'repetitions = "auto"\nprecision = 2'), "plan.toml:3: experiment.precision: Input should"),
        (
            ('concurrency = "{concurrency}"', 'concurrency = "{concurency}"'),
            "plan.toml:15: load.concurrency: {concurency} is not a factor",
        ),
        (
            ('concurrency = "{concurrency}"', 'concurrency = "lots"'),
            "plan.toml:15: load.concurrency: Input should be a valid integer",
        ),
        (
            ('path = "/dynamic?work_us=1000"', 'pth = "/"'),
            "plan.toml:14: load.pth: unknown key (a typo?) (at cpus=1 concurrency=25)",
        ),
        (
            ('concurrency = "25..75:25"', 'concurrency = "75..25"'),
            "plan.toml:8: factors.concurrency: factor 'concurrency': range",
        ),
        (
            ('builtin = { model = "prefork" }', 'builtin = { model = "forking" }'),
            "plan.toml:11: target.builtin.model: Input should be",
        ),
        (("[load]", "[load\n"), "plan.toml: not valid TOML"),
        (
            ('builtin = { model = "prefork" }', 'builtin = { model = "prefork" }\naddress = "localhost"'),
            "plan.toml:12: target.address: 'localhost' is not an IP address",
        ),
        (
            ('builtin = { model = "prefork" }', 'builtin = { model = "prefork" }\nnode = "target-host"'),
            "plan.toml:12: target.node: 'target-host' is not an IP address",
        ),
        (
            ('builtin = { model = "prefork" }', 'builtin = { model = "prefork" }\nray = "10.0.0.1:6379"'),
            "plan.toml:10: target: ray is the cluster of the target's node: give node",
        ),
        (
            ("[load]", '[cluster]\naddress = "auto"\nagnets = 2\n\n[load]'),
            "plan.toml:15: cluster.agnets: unknown key (a typo?)",
        ),
        (
            ("[load]", '[cluster]\naddress = "auto"\nagents = 0\n\n[load]'),
            "plan.toml:15: cluster.agents: Input should be greater",
        ),
    ],
)
def test_errors_name_file_line_and_key(tmp_path, change, expected):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(UsageError) as e:
        load_plan(path)
    assert str(e.value).replace(str(tmp_path) + "/", "").startswith(expected), str(e.value)


def test_a_missing_plan_is_one_clear_error(tmp_path):
    with pytest.raises(UsageError, match="cannot read the plan"):
        load_plan(tmp_path / "nope.toml")


def test_a_level_given_twice_is_an_error(tmp_path):
    with pytest.raises(UsageError, match="level 1 is given twice"):
        load_plan(write(tmp_path, GOOD.replace("cpus = [1, 2]", "cpus = [1, 1]")))


def test_overrides_make_another_experiment(tmp_path):
    path = write(tmp_path, GOOD)
    assert (
        load_plan(path).digest
        != load_plan(path, {"duration": "1s"}).digest
        == load_plan(path, {"duration": "1s"}).digest
    )


def test_configuration_files_stay_in_the_targets_folder(tmp_path):
    bad = GOOD.replace(
        'builtin = { model = "prefork" }', 'command = ["true"]\nfiles = [{ path = "../../etc/x.conf", content = "" }]'
    )
    with pytest.raises(UsageError, match="inside the target's folder"):
        load_plan(write(tmp_path, bad))


SEARCHED = """[experiment]
repetitions = 2

[factors]
cpus = [1, 2]

[target]
builtin = { model = "prefork" }

[load]
path = "/dynamic?work_us=1000"

[search]
slo = "p99<=20ms"
precision = "5%"
"""


def test_a_search_plan_reads_its_settings(tmp_path):
    exp = load_plan(write(tmp_path, SEARCHED))
    s = exp.plan.search
    assert s is not None and s.precision == 0.05 and s.arrivals == "poisson" and s.objective.samples_needed() == 5000


@pytest.mark.parametrize(
    "change, expected",
    [
        (('slo = "p99<=20ms"', 'slo = "p99>=20ms"'), "plan.toml:14: search.slo: 'p99>=20ms': an objective bounds"),
        (('precision = "5%"', 'precison = "5%"'), "plan.toml:15: search.precison: unknown key (a typo?)"),
        (('precision = "5%"', 'precision = "lots"'), "plan.toml:15: search.precision: 'lots' is not a share"),
        (("repetitions = 2", 'repetitions = 2\nduration = "5s"'), "plan.toml:3: experiment.duration: with [search]"),
        (('path = "/dynamic?work_us=1000"', 'path = "/"\nrate = 100'), "plan.toml:12: load.rate: with [search]"),
    ],
)
def test_search_errors_name_file_line_and_key(tmp_path, change, expected):
    path = write(tmp_path, SEARCHED.replace(*change))
    with pytest.raises(UsageError) as e:
        load_plan(path)
    assert str(e.value).replace(str(tmp_path) + "/", "").startswith(expected), str(e.value)


def test_a_level_holding_a_start_time_placeholder_is_refused_not_filled_again(tmp_path):
    p = write(
        tmp_path,
        '[factors]\narg = ["--x={port}", "b"]\n[target]\ncommand = ["sleep", "{arg}"]\n[load]\nconcurrency = 2\n',
    )
    with pytest.raises(UsageError, match=r"plan.toml:2: factors.arg: level '--x=\{port\}' holds \{port\}"):
        load_plan(p)
