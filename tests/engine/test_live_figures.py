"""What the engine reports while it runs (`engine.run(config, live=...)`),
for the live progress line: figures about four times a second, the start and
the plan, and each whole second's count, errors and percentiles, the same
as the result's timeline."""

from corebench import engine
from corebench.config.settings import LoadSettings, engine_config
from corebench.engine import Figures
from corebench.targets.builtin import Served
from corebench.testing import free_port


def run(live=None, **settings: object) -> tuple[list[Figures], object]:
    seen: list[Figures] = []
    result = engine.run(engine_config(LoadSettings(**settings)), live=live or seen.append)
    return seen, result


def test_figures_come_four_times_a_second_and_match_the_timeline():
    with Served("--workers", "1") as s:
        seen, r = run(url=s.url, concurrency=4, duration="2.5s", keep_alive=True, threads=2)
    started = [f for f in seen if f.elapsed_s is not None]
    assert len(started) >= 2 * 2, seen  # at least twice a second (about four times)
    assert all(f.length_s == 2.5 and f.requests is None for f in started)
    finished = [f.finished for f in seen]
    assert finished == sorted(finished) and finished[-1] <= r.requests
    seconds = {f.second.second: f.second for f in seen if f.second is not None}
    assert seconds and max(seconds) >= 1, seen  # seconds 0 and 1 were over before the end
    timeline = {t.second: t for t in r.timeline}
    for i, sec in seconds.items():
        t = timeline[i]
        assert (sec.completed, sec.errors, sec.p50_us, sec.p99_us) == (t.completed, t.errors, t.p50_us, t.p99_us)


def test_failures_are_counted_as_they_happen_and_a_count_is_the_plan():
    url = f"http://127.0.0.1:{free_port()}/"  # nothing listens: every connect is refused
    # Enough refusals to outlast a live figure (4 a second): 20,000 took 0.11 s
    # on io_uring, 200,000 about a second on either transport.
    seen, r = run(url=url, concurrency=2, requests=200_000, threads=1, keep_alive=True)
    assert r.failed == r.requests
    started = [f for f in seen if f.elapsed_s is not None]
    assert started and all(f.requests == 200_000 and f.length_s is None for f in started)
    assert any(f.failed > 0 and f.failed == f.finished for f in started), seen


def test_a_callback_stops_the_run_by_false_or_ctrl_c_but_not_by_its_own_bug():
    """False stops the run; a KeyboardInterrupt inside the callback (a
    signal handled while it ran) stops it too and marks it interrupted, not
    an exception lost; any other exception is the callback's and the run goes on."""

    def interrupt(_: Figures) -> None:
        raise KeyboardInterrupt

    def broken(_: Figures) -> None:
        raise ValueError("a display's bug")

    with Served("--workers", "1") as s:
        _, stopped = run(url=s.url, concurrency=2, duration="20s", threads=1, live=lambda _: False)
        _, cut = run(url=s.url, concurrency=2, duration="20s", threads=1, live=interrupt)
        seen_broken = engine.run(
            engine_config(LoadSettings(url=s.url, concurrency=2, duration="1.5s", threads=1)), live=broken
        )
    assert stopped.interrupted and stopped.duration_s < 5, stopped.duration_s
    assert cut.interrupted and cut.duration_s < 5, cut.duration_s
    assert not seen_broken.interrupted and seen_broken.duration_s >= 1.4
