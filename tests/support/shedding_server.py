"""An HTTP server that sheds load: a share of its requests get a fast 503,
the rest a 200 after some work; a configuration that "wins" on raw
responses per second while failing its users.

    python tests/support/shedding_server.py PORT correct|shedding

"correct" answers every request with a 200 after 10 ms; "shedding" answers
60% at once with a 503 and the rest with a 200 after 4 ms.
"""

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHED, WORK_S = {"correct": (0, 0.010), "shedding": (60, 0.004)}[sys.argv[2]]
lock = threading.Lock()
seen = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        global seen
        with lock:
            n, seen = seen, seen + 1
        if n % 100 < SHED:
            status, body = 503, b"busy"
        else:
            time.sleep(WORK_S)
            status, body = 200, b"ok"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
