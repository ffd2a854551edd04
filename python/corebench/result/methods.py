"""What a load's result means, beside its figures: a success, a failure, a
percentile, a client-bound generator. The figures themselves are the
engine's (crates/engine/src/result.rs), in the models generated from them
(models.py); the classes here are those models' bases, so the meaning is
written once and the figures once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

if TYPE_CHECKING:
    # Type-only: models.py derives from the classes here.
    from corebench.result.models import AgentSummary, LatencySummary, LoadResult

# A response is a success when its status is 2xx or 3xx (RFC 9110 §15: a
# redirect completed the exchange the client asked for); transport errors,
# 4xx and 5xx are failures, and failures are never throughput.
SUCCESS = range(200, 400)
# A point or a load where more than this share of requests failed (errors or
# unsuccessful statuses) is failing: reported, never offered as best, never
# counted as sustaining its load.
FAILING_SHARE = 0.01
# A generator that used this share of its cores' time (its threads', or an
# agent's) was the limit rather than the server: client-bound. The monitor,
# the load command's warning and the agents' report all judge by it.
CLIENT_BOUND_SHARE = 0.9
# A run at this share of the generator's calibrated ceiling measured the
# generator too: a lower bound of the server (runner.calibrate).
NEAR_CEILING = 0.8
# Each ceiling is measured this many times (runner.calibrate); from their
# mean, lowest and highest the analysis knows all three, and so their spread.
CALIBRATION_REPEATS = 3
# A run shorter than this is mostly its load threads' start (spawning them,
# the first connects): its share of the cores says nothing of a limit.
CLIENT_BOUND_MIN_S = 0.1


class Model(BaseModel):
    """Every result model: read as written, never changed after."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LatencySummaryMethods(Model):
    def at(self, percentile: float) -> int:
        """The value (µs) at one of the percentiles the engine summarized."""
        for p in cast("LatencySummary", self).percentiles:
            if p.percentile == percentile:
                return p.value_us
        raise KeyError(f"percentile {percentile} not summarized")


class AgentSummaryMethods(Model):
    """One agent's share of a distributed run."""

    @property
    def goodput_rps(self) -> float:
        """Successes per second: `throughput_rps` counts every response,
        `unsuccessful` those that failed; failures are never throughput."""
        a = cast("AgentSummary", self)
        ok = a.responses - a.unsuccessful
        return ok / a.duration_s if a.duration_s else 0.0

    @property
    def failures(self) -> int:
        """Errors and responses with a status other than 2xx or 3xx."""
        a = cast("AgentSummary", self)
        return a.failed + a.unsuccessful

    @property
    def run_cpu_s(self) -> float:
        a = cast("AgentSummary", self)
        return a.cpu.user_s + a.cpu.system_s


class LoadResultMethods(Model):
    model_config = ConfigDict(populate_by_name=True)

    @model_serializer(mode="wrap")
    def _without_unasked(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # As the engine writes them: a trace, the heads, HTTP/2's figures and
        # the agents only when there are some, absent rather than null.
        data: dict[str, Any] = handler(self)
        for key in ("trace", "heads", "http2"):
            if data.get(key, 0) is None:
                del data[key]
        if data.get("agents") == []:
            del data["agents"]
        return data

    @property
    def _r(self) -> LoadResult:
        return cast("LoadResult", self)

    @property
    def generator_cpu_s(self) -> float:
        return self._r.cpu.user_s + self._r.cpu.system_s

    @property
    def successes(self) -> int:
        """Responses with a successful status (2xx, 3xx)."""
        return sum(n for code, n in self._r.status_counts.items() if code in SUCCESS)

    @property
    def goodput_rps(self) -> float:
        """Successful responses per second: failures are never throughput."""
        d = self._r.duration_s
        return self.successes / d if d else 0.0

    @property
    def failed_requests(self) -> int:
        """Transport errors plus responses with an unsuccessful status, less
        a replay's responses that had the status its log recorded for the
        same request (the site answered as it did then: not a failure of
        this run)."""
        return self._r.failed + self.unsuccessful - self.as_logged

    @property
    def unsuccessful(self) -> int:
        """Responses with a status other than 2xx or 3xx, as logged or not."""
        return sum(n for code, n in self._r.status_counts.items() if code not in SUCCESS)

    @property
    def as_logged(self) -> int:
        """A replay's unsuccessful (4xx, 5xx) responses whose status the log
        also recorded for that method and target, up to the share of the
        target's log lines that had it: a page logged 200 nine times and 500
        once, answered 500 every time, has one tenth of its 500s as logged."""
        if self._r.replay is None:
            return 0
        n = 0
        for u in self._r.urls:
            lines, answered = sum(u.status_logged.values()), sum(u.status_seen.values())
            for code, c in u.status_seen.items():
                if code not in SUCCESS and code in u.status_logged and lines:
                    n += min(c, round(answered * u.status_logged[code] / lines))
        return n

    def failures(self) -> str:
        """What went wrong, most frequent first: error classes and statuses."""
        r = self._r
        counts = {k: v for k, v in r.errors.model_dump().items() if v}
        counts |= {f"status {code}": n for code, n in r.status_counts.items() if code not in SUCCESS and n}
        return ", ".join(f"{k}: {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"
