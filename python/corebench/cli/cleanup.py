"""`corebench cleanup`: what a killed corebench left behind (its targets and
services still running, its loop-mounted filesystem images, its folders,
its cgroups), stopped, unmounted, detached and deleted (`targets.sweep`),
on this machine or, with --ray, on every node of a Ray cluster (where
`[target] node` started targets). Only what a corebench recorded as its
own: a running corebench's are left be, and so is a user's file or shell
that merely looks like ours or works in our folders."""

from __future__ import annotations

from typing import Annotated

import typer

from corebench.cli import app, fail
from corebench.targets.sweep import SweepError, sweep


@app.command("cleanup")
def cleanup(
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="HOST:PORT",
            help="Clean up every node of this Ray cluster (targets started there by [target] node) instead of here.",
        ),
    ] = None,
) -> None:
    """Stop the targets and services, unmount the images and delete the folders a killed corebench left."""
    if ray is not None:
        from corebench.runner.remote import sweep_nodes

        failed = False
        for node, said, why in sweep_nodes(ray):
            for line in said:
                print(f"{node}: {line}")
            if why:
                print(f"{node}: {why}")
                failed = True
        if failed:
            raise fail("cleanup: not every node could be cleaned up (above)", 1)
        return
    try:
        for line in sweep():
            print(line)
    except SweepError as e:
        for line in e.said:
            print(line)
        code = 2 if "run it as root" in str(e) else 1
        raise fail(str(e), code) from None
