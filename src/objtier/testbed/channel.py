"""Host side of the command port (see guest_init.sh for the guest side and the line protocol).

The port is a virtio-serial port backed by a QEMU unix-socket chardev in server mode, which takes
one client at a time. Every request connects, sends one line, reads lines until the reply with
its own id, and disconnects; an exclusive flock on channel.lock serializes clients of one guest.
Lines from earlier, abandoned requests (other ids) are skipped. A guest that writes while no
client is connected blocks until the next client connects, so nothing the guest says is lost
before it reaches some client.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from objtier.errors import EnvironmentProblem


class ChannelClosed(EnvironmentProblem):
    """The guest side went away (QEMU exited or the socket vanished)."""


class Channel:
    """One connection to the guest's command port, holding the channel lock while open."""

    def __init__(self, sock_path: Path, lock_path: Path, connect_timeout: float = 10.0,
                 lock_timeout: float | None = None):
        # lock_timeout: seconds to wait for another client to finish (None: wait forever)
        self.sock_path = sock_path
        self.lock_path = lock_path
        self.connect_timeout = connect_timeout
        self.lock_timeout = lock_timeout
        self._lock_fd: int | None = None
        self._sock: socket.socket | None = None
        self._buffer = b""

    def __enter__(self) -> "Channel":
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        if self.lock_timeout is None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        else:
            lock_deadline = time.monotonic() + self.lock_timeout
            while True:
                try:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > lock_deadline:
                        self.close()
                        raise ChannelClosed("the guest's command port stays busy") from None
                    time.sleep(0.05)
        deadline = time.monotonic() + self.connect_timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(self.sock_path))
                self._sock = sock
                return self
            except (FileNotFoundError, ConnectionRefusedError):
                sock.close()
                if time.monotonic() > deadline:
                    self.close()
                    raise ChannelClosed(f"cannot connect to the guest's command port {self.sock_path}")
                time.sleep(0.1)

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def send(self, verb: str, ident: str) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(f"{verb} {ident}\n".encode())
        except OSError as error:
            raise ChannelClosed(f"guest command port closed: {error}") from None

    def read_line(self, timeout: float) -> str | None:
        """The next line (without newline), or None when `timeout` seconds pass without one."""
        assert self._sock is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(4096)
            except TimeoutError:
                return None
            except OSError as error:
                raise ChannelClosed(f"guest command port closed: {error}") from None
            if not chunk:
                raise ChannelClosed("guest command port closed (QEMU exited?)")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode(errors="replace").strip()

    def wait_for(self, match: Callable[[list[str]], bool], timeout: float,
                 tick: Callable[[], None] | None = None, tick_s: float = 0.2) -> list[str] | None:
        """Read lines until one (split into words) satisfies `match`; None after `timeout` s.

        `tick` runs at least every `tick_s` seconds while waiting (liveness checks, streaming).
        """
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            line = self.read_line(min(left, tick_s))
            if line is not None:
                words = line.split()
                if words and match(words):
                    return words
            if tick is not None:
                tick()
