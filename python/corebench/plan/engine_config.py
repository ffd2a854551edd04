"""A point's load section as the engine's `LoadConfig`."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from corebench.config.load import LoadConfig
from corebench.plan.model import Experiment, Load
from corebench.units import parse_rate, parse_span_s


def load_config(load: Load, base_url: str, exp: Experiment, plan_dir: Path) -> LoadConfig:
    url = load.url or base_url.rstrip("/") + "/" + load.path.lstrip("/")
    open_loop = load.model == "rate" or (load.model == "replay" and load.speed is not None)
    settings: dict[str, Any] = dict(
        url=url,
        concurrency=load.concurrency or (1000 if open_loop else 1),
        requests=exp.requests,
        duration_s=exp.duration_s,
        keep_alive=load.keep_alive,
        http_version=load.http_version,
        method=load.method,
        headers=list(load.headers.items()),
        timeout_s=load.timeout_s,
        threads=load.threads,
        variable_length=load.variable_length or load.urls is not None or load.model == "replay",
        busy_poll_us=load.busy_poll_us,
        allow_remote=load.allow_remote,
        random_order=load.random,
        seed=exp.seed,
    )
    if load.model == "rate":
        start, end = parse_rate(str(load.rate))
        settings["rate"] = {"rps": start} if end is None else {"rps": start, "end_rps": end, "ramp_s": load.ramp_s}
    if load.model == "users":
        settings["think_s"] = parse_span_s(str(load.think))
    if load.urls is not None:
        from corebench.config.urls import read_url_file

        entries = read_url_file(plan_dir / load.urls, base=url)
        settings["urls"] = [{"url": e.url, "method": e.method, "body_base64": base64.b64encode(e.body).decode()} for e in entries]
    if load.model == "replay":
        settings["replay"] = dict(path=str(plan_dir / str(load.log)), log_format=load.log_format, allow_unsafe=load.allow_unsafe,
                                  limit=load.limit, looped=load.loop, speed=load.speed)
    return LoadConfig(**settings)
