"""A small progress line on stderr: redrawn in place on a terminal, a line every few seconds in logs."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, total: int, enabled: bool = True, log_every: float = 5.0) -> None:
        self.label, self.total, self.done = label, total, 0
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.started = self.last = time.time()
        self.log_every = log_every

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.time()
        if self.enabled and (now - self.last >= (0.2 if self.tty else self.log_every) or self.done >= self.total):
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        frac = self.done / self.total if self.total else 1.0
        width = 30
        bar = "#" * int(frac * width) + "." * (width - int(frac * width))
        rate = self.done / max(now - self.started, 1e-9)
        text = f"{self.label} [{bar}] {self.done:,}/{self.total:,} {frac:4.0%} {rate:,.0f}/s {now - self.started:5.1f}s"
        sys.stderr.write(("\r" + text) if self.tty else (text + "\n"))
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.time())
            if self.tty:
                sys.stderr.write("\n")
            sys.stderr.flush()
