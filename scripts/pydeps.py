"""Prints the Python requirements pyproject.toml names: the build backend's,
the package's own and those of the extras given as arguments, one per line,
for `pip install`. pyproject.toml stays the only list of them."""

import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
wanted = list(project["build-system"]["requires"]) + list(project["project"]["dependencies"])
extras = project["project"].get("optional-dependencies", {})
for name in sys.argv[1:]:
    if name not in extras:
        sys.exit(f"pydeps: no extra {name!r} in pyproject.toml (it has: {', '.join(sorted(extras))})")
    wanted += extras[name]
print("\n".join(dict.fromkeys(wanted)))
