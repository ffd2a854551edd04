"""The validate stage of the CLI: a typed config from parsed flags, with
pydantic's complaint turned into one line that names the flag."""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from corebench.errors import UsageError

T = TypeVar("T", bound=pydantic.BaseModel)


def build(config_type: type[T], flags: dict[str, str], /, **settings: Any) -> T:
    """`flags` maps config fields to the flags that set them."""
    try:
        return config_type(**settings)
    except pydantic.ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        where = flags.get(field, field)
        msg = err["msg"].removeprefix("Value error, ")
        raise UsageError(f"{where}: {msg}" if where else msg) from None
