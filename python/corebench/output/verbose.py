"""ab's -v lines: what ab prints at verbosity 2 and above while it runs
(support/ab.c), folded, since corebench keeps no list of its requests:

- 2 and above: the request as sent ("INFO: GET header == ", between
  "---" lines), the head of the first response received ("LOG: header
  received:"), and "WARNING: Response code not 2xx (404)" for each status
  outside 2xx;
- 3 and above: "LOG: Response code = 200" for the 2xx statuses too.

ab prints a status line for every response and every response's head;
here each status is one line with the number of responses it stands for,
and the first response's head stands for the others. At level 1 ab adds
only its socket errors, which corebench always reports."""

from __future__ import annotations

from corebench.config.settings import LoadConfig
from corebench.result import LoadResult


def _times(n: int) -> str:
    return f" ({n:,} responses)" if n > 1 else ""


class AbVerbose:
    name = "verbose"

    def __init__(self, level: int = 2) -> None:
        self.level = level

    def render(self, result: LoadResult, _config: LoadConfig) -> str:
        if self.level < 2:
            return ""
        lines = []
        if result.heads is not None:
            method = result.heads.request.split(" ", 1)[0]
            lines.append(f"INFO: {method} header == \n---\n{result.heads.request}\n---")
            if result.heads.response is not None:
                lines.append(f"LOG: header received:\n{result.heads.response}")
        for code, n in sorted(result.status_counts.items()):
            if not 200 <= code < 300:
                lines.append(f"WARNING: Response code not 2xx ({code}){_times(n)}")
            elif self.level >= 3:
                lines.append(f"LOG: Response code = {code}{_times(n)}")
        return "".join(line + "\n" for line in lines)
