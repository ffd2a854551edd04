"""An HTTP server that dies (exit status 3) after answering a number of
requests: a target that fails mid-run, deterministically.

    python tests/support/dying_server.py PORT REQUESTS
"""

import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIMIT = int(sys.argv[2])
served = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        global served
        served += 1
        if served > LIMIT:
            os._exit(3)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


print(f"dying server on {sys.argv[1]}, exits after {LIMIT} requests", flush=True)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
