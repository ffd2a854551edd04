"""The files the access log's site served (stylesheets, scripts, images,
slides, downloads), written into the CMS's document root with the largest
size the log recorded for each, so that a replay gets them from Apache as
the logged site did, and only the pages reach PHP: the blog's and the
articles' paths, and folder paths (ending in /), are the CMS's. Run per
start by the plan's prepare step:
    python3 assets.py LOG DOCROOT"""

import os
import re
import sys

# The blog's and the articles' pages are the CMS's own.
DYNAMIC = ("/blog/", "/articles/")
SERVED = {"200", "206", "304"}
LINE = re.compile(r'"(?:GET|HEAD) (/[^ ?"]*)[^"]*" (\d{3}) (\d+|-)')


def main(log: str, root: str) -> int:
    sizes: dict[str, int] = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            if not m or m.group(2) not in SERVED:
                continue
            path = m.group(1)
            if path.endswith("/") or path.startswith(DYNAMIC) or ".." in path or path in ("/blog", "/index.php"):
                continue
            sizes[path] = max(sizes.get(path, 0), 0 if m.group(3) == "-" else int(m.group(3)))
    for path, size in sorted(sizes.items()):
        dest = os.path.join(root, path.lstrip("/"))
        if os.path.isdir(dest) or any(os.path.isfile(p) for p in _parents(root, dest)):
            continue  # a file's path that another file's path passes through
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as out:
            out.write((b"x" * max(size - 1, 0) + b"\n")[:size])
    print(f"{len(sizes)} static files written into {root}")
    return 0


def _parents(root: str, dest: str) -> list[str]:
    out, here = [], os.path.dirname(dest)
    while len(here) > len(root):
        out.append(here)
        here = os.path.dirname(here)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
