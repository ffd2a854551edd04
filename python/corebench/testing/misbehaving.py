"""Purpose-built HTTP/1.1 servers that misbehave, for load-generator integration tests.

    with MisbehavingServer("garbage") as srv:
        run_corebench(srv.url)          # "http://127.0.0.1:PORT/"
        assert srv.requests >= 1

Stdlib only. Each accepted connection gets a daemon handler thread that reads
request heads (plus any Content-Length body, which is discarded) and answers
according to ``mode``; see the ``_mode_*`` functions for what each one does and
why it matters. Stopping is fast even with connections held open.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable

_MAX_HEAD = 64 * 1024


def _response(status: bytes, body: bytes, close: bool, extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n" % len(body) + extra
    return head + (b"Connection: close\r\n" if close else b"") + b"\r\n" + body


def _mode_ok(_srv: MisbehavingServer, sock: socket.socket, close: bool) -> bool:
    """Well-behaved baseline: 200, 5-byte body, keep-alive honoured."""
    sock.sendall(_response(b"200 OK", b"hello", close))
    return not close


def _mode_garbage(_srv: MisbehavingServer, sock: socket.socket, _close: bool) -> bool:
    """Not HTTP at all: the client must report a parse error, not hang or crash."""
    sock.sendall(b"\x00\x01garbage not http\r\n\r\n")
    return False


def _mode_short_body_close(_srv: MisbehavingServer, sock: socket.socket, _close: bool) -> bool:
    """Body shorter than Content-Length, then EOF: a truncated response is an
    error, never a success with 50 bytes."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 50)
    return False


def _mode_short_body_hold(srv: MisbehavingServer, sock: socket.socket, _close: bool) -> bool:
    """Body shorter than Content-Length and then silence: only a read timeout
    can end this request; the connection must not be reused."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 50)
    srv._stop.wait()
    return False


def _mode_close_mid_headers(_srv: MisbehavingServer, sock: socket.socket, _close: bool) -> bool:
    """EOF in the middle of the head: the incomplete head must be an error."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Le")
    return False


def _mode_close_mid_body(_srv: MisbehavingServer, sock: socket.socket, _close: bool) -> bool:
    """Full head announcing 1000 bytes, 10 delivered, then EOF."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"0123456789")
    return False


def _mode_chunked_valid(_srv: MisbehavingServer, sock: socket.socket, close: bool) -> bool:
    """Valid chunked body ("hello world") with a chunk extension and a trailer,
    written in small pieces so the parser must cope with arbitrary splits."""
    pieces = [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n",
        b"Trailer: X-Trailer\r\n" + (b"Connection: close\r\n" if close else b"") + b"\r\n",
        b"5;ext=1\r\nhello\r\n",
        b"1\r\n \r",
        b"\n5\r\nwor",
        b"ld\r\n",
        b"0\r\nX-Trailer: yes\r\n",
        b"\r\n",
    ]
    for piece in pieces:
        sock.sendall(piece)
        time.sleep(0.001)
    return not close


def _mode_chunked_broken(_srv: MisbehavingServer, sock: socket.socket, _close: bool) -> bool:
    """Invalid chunk-size line: must be a parse error, not a hang."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n")
    return False


def _mode_never_answers(srv: MisbehavingServer, _sock: socket.socket, _close: bool) -> bool:
    """Request read, nothing ever sent: exercises timeouts and in-flight
    accounting at shutdown of the load generator."""
    srv._stop.wait()
    return False


def _mode_reset(_srv: MisbehavingServer, sock: socket.socket, _close: bool) -> bool:
    """Request read, then RST (SO_LINGER 0): ECONNRESET must be counted as an
    error and the connection replaced."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    return False


def _mode_status_500(_srv: MisbehavingServer, sock: socket.socket, close: bool) -> bool:
    """Valid 500 response: a well-formed response that is still a failure by
    status; keep-alive honoured."""
    sock.sendall(_response(b"500 Internal Server Error", b"error", close))
    return not close


def _mode_varying_length(srv: MisbehavingServer, sock: socket.socket, close: bool) -> bool:
    """Valid 200s whose body alternates 5 and 6 bytes (server-wide): byte
    counters must sum real body sizes, not assume a constant one."""
    with srv._lock:
        n = srv._varying
        srv._varying += 1
    sock.sendall(_response(b"200 OK", b"hello!" if n % 2 else b"hello", close))
    return not close


_Handler = Callable[["MisbehavingServer", socket.socket, bool], bool]
_HANDLERS: dict[str, _Handler] = {
    name[len("_mode_") :]: fn for name, fn in list(globals().items()) if name.startswith("_mode_")
}
MODES = tuple(_HANDLERS)


class MisbehavingServer:
    """HTTP/1.1 server on 127.0.0.1:<free port> answering every request per ``mode``."""

    def __init__(self, mode: str) -> None:
        if mode not in _HANDLERS:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        self.mode = mode
        self._handler = _HANDLERS[mode]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._requests = self._connections = self._varying = 0
        self._clients: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._listener: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self.port = 0
        self.url = ""

    @property
    def requests(self) -> int:  # complete request heads received
        with self._lock:
            return self._requests

    @property
    def connections(self) -> int:  # accepted connections
        with self._lock:
            return self._connections

    def start(self) -> MisbehavingServer:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", 0))
        ls.listen(1024)
        ls.setblocking(False)
        self._listener = ls
        self.port = ls.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True, name=f"misbehaving-accept-{self.port}")
        self._acceptor.start()
        return self

    def stop(self, timeout: float = 1.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        if self._acceptor is not None:
            self._acceptor.join(timeout)
        with self._lock:
            clients, threads = list(self._clients), list(self._threads)
            self._clients.clear()
        for sock in clients:
            _shutdown_close(sock, socket.SHUT_RDWR)
        if self._listener is not None:
            self._listener.close()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> MisbehavingServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            while not self._stop.is_set():
                if not sel.select(timeout=0.05):
                    continue
                try:
                    sock, _ = self._listener.accept()
                except OSError:
                    continue
                sock.setblocking(True)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                t = threading.Thread(target=self._serve, args=(sock,), daemon=True)
                with self._lock:
                    if self._stop.is_set():
                        sock.close()
                        break
                    self._connections += 1
                    self._clients.add(sock)
                    self._threads.add(t)
                t.start()

    def _serve(self, sock: socket.socket) -> None:
        buf = b""
        try:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buf:
                    if len(buf) > _MAX_HEAD:
                        return
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.split(b"\r\n")
                headers: dict[bytes, bytes] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    headers[name.strip().lower()] = value.strip().lower()
                need = int(headers.get(b"content-length", b"0") or 0)
                while len(buf) < need:  # read and discard the request body
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                buf = buf[need:]
                with self._lock:
                    self._requests += 1
                conn = headers.get(b"connection", b"")
                close = conn == b"close" or (lines[0].endswith(b"HTTP/1.0") and conn != b"keep-alive")
                if not self._handler(self, sock, close):
                    return
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._clients.discard(sock)
                self._threads.discard(threading.current_thread())
            # SHUT_WR: FIN goes out after everything already sent.
            _shutdown_close(sock, socket.SHUT_RDWR if self._stop.is_set() else socket.SHUT_WR)


def _shutdown_close(sock: socket.socket, how: int) -> None:
    """shutdown() then close(); SHUT_RDWR also wakes a thread blocked in recv()."""
    with contextlib.suppress(OSError):
        sock.shutdown(how)
    with contextlib.suppress(OSError):
        sock.close()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        sys.exit(f"usage: {sys.argv[0]} MODE   (MODE in: {', '.join(MODES)})")
    with MisbehavingServer(sys.argv[1]) as srv:
        print(srv.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
