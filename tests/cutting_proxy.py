"""A loopback TCP proxy that cuts file downloads short: it relays every connection to the
local service, and after a request for a ``/download`` path it closes the connection once the
answer's headers and `cut_after` bytes of its body went through, `cuts` times (None: every
time).

It stands between a real client and the real service, like a flaky network, so the client's
handling of a body that breaks off can be tested over real HTTP. With ``cuts=0`` it only
relays, and `request_headers`, `answer_headers` and `sent` tell what went over the wire,
`open_lines` which connections are open. `hold` cuts every connection and refuses new ones
until `release`, as a network that goes away and comes back; `hold_at` holds when a given
request comes.

>>> with CuttingProxy(service.endpoint, cut_after=1 << 20, cuts=2) as proxy:
...     Client(proxy.endpoint, service.project, key=service.key).bucket(b).download(f)
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from types import TracebackType

import httpx

RELAY_BLOCK = 64 * 1024


class CuttingProxy:
    def __init__(self, endpoint: str, *, cut_after: int, cuts: int | None) -> None:
        url = httpx.URL(endpoint)
        self._upstream = (url.host, url.port or 80)
        self._path = url.path
        self._cut_after = cut_after
        self._cuts_left = cuts
        self._lock = threading.Lock()
        self.cuts_made = 0
        self._sent = bytearray()  # every byte relayed, each way
        self._answered = bytearray()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._holding = False
        self._hold_at: bytes | None = None
        self._open: dict[int, tuple[list[bytes], socket.socket, socket.socket]] = {}
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def endpoint(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}{self._path}"

    def __enter__(self) -> CuttingProxy:
        self._start(self._accept)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):  # wakes the thread blocked in accept(); close does not
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self.hold()  # the connections still open end too, as the network's going away would
        for thread in self._threads:
            thread.join(timeout=5)

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            if self._holding:
                _close(downstream)
                continue
            upstream = socket.create_connection(self._upstream)
            with self._lock:
                self._open[id(downstream)] = ([], downstream, upstream)
            state: dict[str, int | None] = {"budget": None}
            self._start(self._requests, downstream, upstream, state)
            self._start(self._answers, upstream, downstream, state)

    def hold(self) -> None:
        """Cut every open connection, and refuse new ones until `release`."""
        self._holding = True
        with self._lock:
            held = list(self._open.values())
        for _, downstream, upstream in held:
            _close(downstream, upstream)

    def release(self) -> None:
        """Relay new connections again."""
        self._holding = False

    def hold_at(self, part: str) -> None:
        """`hold` when the next request whose request line contains `part` comes (that
        request is not relayed); `held` says whether it came."""
        self._hold_at = part.encode()

    @property
    def held(self) -> bool:
        return self._hold_at is None and self._holding

    def request_lines(self) -> list[str]:
        """The request line of every request relayed so far (since `forget`)."""
        with self._lock:
            found = re.findall(rb"(?:^|\r\n)([A-Z]+ \S+ HTTP/1\.1)\r\n", bytes(self._sent))
        return [line.decode("latin-1") for line in found]

    def open_lines(self, part: str) -> list[str]:
        """The first request lines of the connections open now that contain `part`."""
        with self._lock:
            firsts = [lines[0].decode("latin-1") for lines, _, _ in self._open.values() if lines]
        return [line for line in firsts if part in line]

    def wait_closed(self, part: str, timeout: float) -> None:
        """Wait until no open connection's first request line contains `part` (at most
        `timeout` seconds, then AssertionError)."""
        waited = threading.Event()
        for _ in range(int(timeout / 0.01)):
            if not self.open_lines(part):
                return
            waited.wait(0.01)
        raise AssertionError(f"a connection for {part} is still open: {self.open_lines(part)}")

    def forget(self) -> None:
        """Forget what was relayed so far (`request_headers` and `answer_headers` start anew)."""
        with self._lock:
            self._sent.clear()
            self._answered.clear()

    def sent(self) -> bytes:
        """Every byte of the requests relayed so far (since `forget`), heads and bodies."""
        with self._lock:
            return bytes(self._sent)

    def request_headers(self, name: str) -> list[str]:
        """The values of the header `name` in every request relayed so far."""
        with self._lock:
            return _header_values(bytes(self._sent), name)

    def answer_headers(self, name: str) -> list[str]:
        """The values of the header `name` in every answer relayed so far (found in the raw
        stream, so a body could hold the same text: tests use headers no body holds)."""
        with self._lock:
            return _header_values(bytes(self._answered), name)

    def _take_cut(self) -> bool:
        with self._lock:
            if self._cuts_left is not None and self._cuts_left <= 0:
                return False
            if self._cuts_left is not None:
                self._cuts_left -= 1
            self.cuts_made += 1
            return True

    def _requests(
        self, source: socket.socket, sink: socket.socket, state: dict[str, int | None]
    ) -> None:
        try:
            while block := source.recv(RELAY_BLOCK):
                line = block.split(b"\r\n", 1)[0]
                with self._lock:
                    lines = self._open.get(id(source), ([],))[0]
                    if not lines:
                        lines.append(line)
                if self._hold_at is not None and self._hold_at in line:
                    self._hold_at = None
                    self.hold()
                    return
                if line.startswith(b"GET ") and b"/download" in line and self._take_cut():
                    state["budget"] = -1  # armed: counted from the end of the headers
                with self._lock:
                    self._sent += block
                sink.sendall(block)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.pop(id(source), None)
            _close(source, sink)

    def _answers(
        self, source: socket.socket, sink: socket.socket, state: dict[str, int | None]
    ) -> None:
        try:
            while block := source.recv(RELAY_BLOCK):
                budget = state["budget"]
                if budget == -1 and (end := block.find(b"\r\n\r\n")) >= 0:
                    budget = state["budget"] = end + 4 + self._cut_after
                if budget is not None and budget >= 0:
                    if len(block) >= budget:
                        sink.sendall(block[:budget])
                        return
                    state["budget"] = budget - len(block)
                with self._lock:
                    self._answered += block
                sink.sendall(block)
        except OSError:
            pass
        finally:
            _close(source, sink)


def _header_values(stream: bytes, name: str) -> list[str]:
    found = re.findall(rb"\r\n" + re.escape(name.encode()) + rb":[ \t]*([^\r\n]*)", stream, re.I)
    return [value.decode("latin-1").strip() for value in found]


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
