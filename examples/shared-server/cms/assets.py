"""The static files the access log asked for (stylesheets, scripts, images,
downloads), written into the CMS's document root with the sizes the log
recorded, so that a replay gets them from Apache as the logged site did,
and only the pages reach PHP. Run per start by the plan's prepare step:
    python3 assets.py LOG DOCROOT"""

import os
import re
import sys

STATIC = re.compile(r"\.(css|js|png|jpe?g|gif|ico|svg|woff2?|ttf|pdf|txt|xml|xsl|tar|gz|zip)$", re.IGNORECASE)
LINE = re.compile(r'"(?:GET|HEAD) (/[^ ?"]*)[^"]*" (\d{3}) (\d+|-)')


def main(log: str, root: str) -> int:
    sizes: dict[str, int] = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            if m and m.group(2) == "200" and STATIC.search(m.group(1)) and ".." not in m.group(1):
                sizes[m.group(1)] = max(sizes.get(m.group(1), 0), 0 if m.group(3) == "-" else int(m.group(3)))
    for path, size in sizes.items():
        dest = os.path.join(root, path.lstrip("/"))
        if os.path.isdir(dest):
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as out:
            out.write((b"x" * max(size - 1, 0) + b"\n")[:size])
    print(f"{len(sizes)} static files written into {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
