"""An HTTP/1.x server on a free loopback port that keeps every request it
receives, byte for byte (request line, head, and the body its
Content-Length announces), and answers each with a 200 saying how many body
bytes it got: the truth to check a client's requests against (ab's and
corebench's), and a stand-in for a proxy (it answers absolute-form targets
itself).

    with RecordingServer() as srv:
        run(..., srv.url)
        srv.requests[0].body == expected
"""

from __future__ import annotations

import hashlib
import socket
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    line: str
    headers: list[tuple[str, str]]
    body: bytes
    size: int  # bytes on the wire: head, blank line and body

    def header(self, name: str) -> str | None:
        values = [v for n, v in self.headers if n.lower() == name.lower()]
        return values[0] if values else None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


class RecordingServer:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port = self._listener.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.address}/"
        self._stop = threading.Event()

    def __enter__(self) -> RecordingServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        buf = b""
        with sock:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                line, *fields = head.decode("latin-1").split("\r\n")
                headers = [(n.strip(), v.strip()) for n, _, v in (f.partition(":") for f in fields)]
                length = int(next((v for n, v in headers if n.lower() == "content-length"), "0"))
                while len(buf) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                req = Request(line, headers, body, len(head) + 4 + length)
                with self._lock:
                    self.requests.append(req)
                conn = (req.header("Connection") or "").lower()
                close = conn == "close" or (line.endswith("HTTP/1.0") and conn != "keep-alive")
                answer = b"received %d body bytes\n" % length
                sock.sendall(
                    b"HTTP/1.1 200 OK\r\nServer: recording/1\r\nContent-Length: %d\r\n" % len(answer)
                    + (b"Connection: close\r\n" if close else b"")
                    + b"\r\n"
                    + answer
                )
                if close:
                    return
