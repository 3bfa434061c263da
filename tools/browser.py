"""Render report pages in headless Chromium: console errors, fetches, render time, a screenshot.

    python tools/browser.py PAGE.html [PAGE.html ...] [--screenshot-dir DIR] [--json FILE]

Per page it prints one line: the page's size, its load time (navigation start to the end of the
load event, from the page's own ``performance`` entry) and the time until the page's script said it
ran (``data-ready`` on ``<body>``), the console errors and uncaught exceptions, any request the page
made for something other than itself (a self-contained page makes none), and whether the screenshot
is blank (one colour, or nearly). Exit 0 when every page is clean, 1 when one is not, 3 when
Chromium is missing or does not start.

How: Debian's ``chromium`` (``CHROMIUM`` or ``/usr/bin/chromium``), started as the CI runs it (root:
``--no-sandbox``) with a fresh profile directory and the DevTools protocol on a pipe
(``--remote-debugging-pipe``: JSON messages over file descriptors 3 and 4, no port, no dependency);
one browser for all the pages given, each in a new tab; a small client here enables the Runtime,
Log, Network and Page domains, navigates, waits for the
load event and the script's mark, and takes two screenshots of a 1280x900 viewport: one at full
size (saved, for people) and one at a quarter scale that is decoded here (PNG: zlib and the five
row filters by hand) to measure its pixels.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars")
VIEWPORT = (1280, 900)
BLANK_STDEV = 4.0
"""A screenshot whose luminance varies less than this (0-255 scale) is blank."""
BLANK_INK = 0.003
"""... or whose pixels that differ from the most common colour are fewer than this share."""


def chromium() -> str | None:
    """The Chromium binary to use, or None."""
    given = os.environ.get("CHROMIUM")
    for candidate in (given, "/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"),
                      shutil.which("google-chrome")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


# --------------------------------------------------------------------------- PNG
def png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, rows) of an 8-bit RGB or RGBA PNG, rows unfiltered."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, [], 0
    height = depth = colour = 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if depth != 8 or colour not in (2, 6):
        raise ValueError(f"PNG of bit depth {depth}, colour type {colour}: only 8-bit RGB(A) is read")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif kind != 0:
            raise ValueError(f"PNG row filter {kind}")
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def ink(data: bytes) -> dict[str, float]:
    """How much a screenshot shows: the luminance's standard deviation, and the share of pixels
    that differ from the most common colour (the background)."""
    width, height, bpp, rows = png_pixels(data)
    colours: dict[bytes, int] = {}
    total = sq = 0.0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            px = row[x:x + 3]
            colours[px] = colours.get(px, 0) + 1
            lum = 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2]
            total += lum
            sq += lum * lum
    n = width * height
    mean = total / n
    background = max(colours.values())
    return {"stdev": max(sq / n - mean * mean, 0.0) ** 0.5, "ink": 1 - background / n, "colours": len(colours)}


def is_blank(measure: dict[str, float]) -> bool:
    return measure["stdev"] < BLANK_STDEV or measure["ink"] < BLANK_INK


# --------------------------------------------------------------------------- DevTools over a pipe
class Pipe:
    """The DevTools protocol over ``--remote-debugging-pipe``: NUL-terminated JSON messages, the
    browser reading fd 3 and writing fd 4."""

    def __init__(self, binary: str, profile: str, extra: tuple[str, ...] = ()) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        wanted = {3: to_child_r, 4: from_child_w}

        def wire() -> None:  # in the child: the two pipe ends on fds 3 and 4
            # (first out of the way, above 9: a pipe end may itself be fd 3 or 4)
            high = {target: fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for target, fd in wanted.items()}
            for target, fd in high.items():
                os.dup2(fd, target)
                os.set_inheritable(target, True)
                os.close(fd)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, *extra, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, close_fds=False,
            preexec_fn=wire, start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 30.0) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> dict[str, Any] | None:
        """The first event ``method`` (seen already or arriving within ``timeout`` s), or None."""
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events:
                if ev.get("method") == method:
                    return ev
            try:
                self.events.append(self._read(deadline))
            except TimeoutError:
                return None

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe: " + self.stderr_tail())
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def stderr_tail(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")[-600:]

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close", timeout=5)
                except (RuntimeError, TimeoutError, OSError):
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)  # (its own session: the renderer and GPU helpers end too)
                self.proc.wait(timeout=10)
        finally:
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            if self.proc.stderr is not None:
                self.proc.stderr.close()


@dataclass
class Rendered:
    page: str
    bytes: int
    load_ms: float | None = None
    ready_ms: float | None = None
    wall_ms: float = 0.0
    ready: bool = False
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)
    pixels: dict[str, float] = field(default_factory=dict)
    blank: bool = True
    screenshot: str = ""
    title: str = ""
    height_px: int = 0
    probe: Any = None
    """What the ``probe`` expression given to :meth:`Browser.render` returned (after the screenshots)."""

    @property
    def clean(self) -> bool:
        return self.ready and not self.console_errors and not self.exceptions and not self.fetches and not self.blank

    def line(self) -> str:
        problems = [*(f"console error: {e}" for e in self.console_errors),
                    *(f"exception: {e}" for e in self.exceptions), *(f"fetch: {u}" for u in self.fetches)]
        if not self.ready:
            problems.append("the page's script did not finish (no data-ready mark)")
        if self.blank:
            problems.append(f"blank screenshot ({self.pixels})")
        load = f"{self.load_ms:.0f} ms" if self.load_ms is not None else "?"
        ready = f"{self.ready_ms:.0f} ms" if self.ready_ms is not None else "?"
        return (f"{'ok ' if self.clean else 'BAD'} {self.page}: {self.bytes / 1024:,.0f} KiB, load {load}, script done "
                f"{ready}, {self.height_px:,} px tall, wall {self.wall_ms:.0f} ms"
                + (f"; screenshot {self.screenshot}" if self.screenshot else "")
                + ("".join(f"\n    {p[:300]}" for p in problems)))


class Browser:
    """One headless Chromium (a fresh profile directory, removed on close); :meth:`render` opens
    each page in a new tab of it."""

    def __init__(self, binary: str | None = None) -> None:
        found = binary or chromium()
        if found is None:
            raise FileNotFoundError("no Chromium (set CHROMIUM, or apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="browser-profile-")
        try:
            self.pipe = Pipe(found, self.profile)
            self.pipe.send("Browser.getVersion")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pipe = getattr(self, "pipe", None)
        if pipe is not None:
            pipe.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def render(self, page: str | Path, screenshot: str | Path | None = None, timeout: float = 60.0,
               probe: str | None = None, scroll: int = 0) -> Rendered:
        """Open ``page`` (a local file) in a new tab and report what happened; ``probe``: a JavaScript
        expression evaluated last (its value, JSON-able, in :attr:`Rendered.probe`)."""
        pipe = self.pipe
        path = Path(page).resolve()
        url = path.as_uri()
        out = Rendered(str(page), path.stat().st_size)
        t0 = time.monotonic()
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        try:
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send("Emulation.setDeviceMetricsOverride", {"width": VIEWPORT[0], "height": VIEWPORT[1],
                                                             "deviceScaleFactor": 1, "mobile": False}, session=session)
            pipe.events.clear()
            pipe.send("Page.navigate", {"url": url}, session=session, timeout=timeout)
            if pipe.wait_for("Page.loadEventFired", timeout) is None:
                out.exceptions.append(f"no load event within {timeout:.0f} s")

            def evaluate(expr: str) -> Any:
                return pipe.send("Runtime.evaluate", {"expression": expr, "returnByValue": True},
                                 session=session, timeout=timeout).get("result", {}).get("value")

            timing = json.loads(evaluate(
                "JSON.stringify({nav: performance.getEntriesByType('navigation')[0] || null, "
                "ready: document.body ? document.body.getAttribute('data-ready') : null, "
                "readyAt: window.__readyAt || null, title: document.title, "
                "height: document.documentElement.scrollHeight})") or "{}")
            nav = timing.get("nav") or {}
            if nav.get("loadEventEnd"):
                out.load_ms = float(nav["loadEventEnd"])
            out.ready = timing.get("ready") == "1"
            out.ready_ms = float(timing["readyAt"]) if timing.get("readyAt") else None
            out.title = str(timing.get("title") or "")
            out.height_px = int(timing.get("height") or 0)
            if scroll:  # (the screenshots show the viewport at this height of the page)
                evaluate(f"window.scrollTo(0, {int(scroll)}); window.scrollY")
            full = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session, timeout=timeout)
            if screenshot is not None:
                Path(screenshot).write_bytes(base64.b64decode(full["data"]))
                out.screenshot = str(screenshot)
            top = evaluate("window.scrollY") or 0  # (a clip is in page coordinates: the viewport's)
            small = pipe.send("Page.captureScreenshot", {"format": "png", "clip": {
                "x": 0, "y": top, "width": VIEWPORT[0], "height": VIEWPORT[1], "scale": 0.25}}, session=session,
                timeout=timeout)
            out.pixels = {k: round(v, 4) for k, v in ink(base64.b64decode(small["data"])).items()}
            out.blank = is_blank(out.pixels)
            if probe is not None:
                out.probe = evaluate(probe)
            for ev in pipe.events:
                if ev.get("sessionId") not in (None, session):
                    continue
                method, params = ev.get("method"), ev.get("params", {})
                if method == "Runtime.exceptionThrown":
                    d = params.get("exceptionDetails", {})
                    out.exceptions.append(str((d.get("exception") or {}).get("description") or d.get("text")))
                elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                    out.console_errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                                       for a in params.get("args", [])))
                elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                    out.console_errors.append(str(params["entry"].get("text")))
                elif method == "Network.requestWillBeSent":
                    requested = params.get("request", {}).get("url", "")
                    if requested != url and not requested.startswith("data:"):
                        out.fetches.append(requested)
        finally:
            pipe.send("Target.closeTarget", {"targetId": target})
            pipe.events.clear()
        out.wall_ms = (time.monotonic() - t0) * 1000
        return out


def render(page: str | Path, screenshot: str | Path | None = None, timeout: float = 60.0,
           binary: str | None = None) -> Rendered:
    """``page`` rendered in a fresh Chromium of its own."""
    with Browser(binary) as browser:
        return browser.render(page, screenshot, timeout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="browser.py", description=__doc__.split("\n\n")[0])
    p.add_argument("pages", nargs="+", type=Path)
    p.add_argument("--screenshot-dir", type=Path, default=None, help="save each page's screenshot (PAGE.png) here")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON to FILE")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--scroll", type=int, default=0, help="scroll this many pixels down before the screenshots")
    args = p.parse_args(argv)
    for page in args.pages:
        if not page.is_file():
            print(f"browser.py: {page}: no such file", file=sys.stderr)
            return 2
    if chromium() is None:
        print("browser.py: no Chromium found (set CHROMIUM, or apt-get install chromium)", file=sys.stderr)
        return 3
    if args.screenshot_dir is not None:
        args.screenshot_dir.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        with Browser() as browser:
            for page in args.pages:
                shot = args.screenshot_dir / (page.stem + ".png") if args.screenshot_dir is not None else None
                r = browser.render(page, shot, timeout=args.timeout, scroll=args.scroll)
                print(r.line(), flush=True)
                results.append(r)
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"browser.py: Chromium failed: {exc}", file=sys.stderr)
        return 3
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0 if all(r.clean for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
