"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe): the
standard library only, no driver to install, the Chromium the system has. Enough of the protocol
to load a page offline, run script in it, move and press the mouse, and take screenshots."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--proxy-server=127.0.0.1:9",  # anything that does reach for the network goes nowhere
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


class CdpError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


class Browser:
    """One headless Chromium with one page (tab), attached over the pipe."""

    def __init__(self, chromium: str, profile: Path, width: int = 1280, height: int = 1600):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def as_fds_3_and_4() -> None:  # the pipe's ends where Chromium looks for them
            a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # dup2 leaves 3 and 4 inheritable; Python's own files are not (PEP 446), so
            # nothing else leaks into the browser with close_fds off (on, it would close 3, 4)
            preexec_fn=as_fds_3_and_4,
            close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def close(self) -> None:
        """End the browser (the process this harness started, by its own handle)."""
        with contextlib.suppress(CdpError, OSError):
            self.send("Browser.close", session=False, timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the protocol ----------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise CdpError("no answer from Chromium in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CdpError("Chromium closed the pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(
        self, method: str, *, session: bool = True, timeout: float = 60, **params: Any
    ) -> dict[str, Any]:
        """Run one command and return its result; events that arrive meanwhile are kept."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            got = self._read_message(deadline)
            if got.get("id") == self._next:
                if "error" in got:
                    raise CdpError(f"{method}: {got['error']}")
                result: dict[str, Any] = got.get("result", {})
                return result
            if "method" in got:
                self.events.append(got)

    def wait_for(self, method: str, timeout: float = 60) -> dict[str, Any]:
        """The first event named method (kept, or still to come); it stays among the events."""
        for e in self.events:
            if e["method"] == method:
                return e
        deadline = time.monotonic() + timeout
        while True:
            got = self._read_message(deadline)
            if "method" in got:
                self.events.append(got)
                if got["method"] == method:
                    return got

    # ---- what the tests do -------------------------------------------------------------------
    def open(self, page: Path) -> None:
        """Load a file and wait for its load event."""
        self.events.clear()
        self.send("Page.navigate", url=page.resolve().as_uri())
        self.wait_for("Page.loadEventFired", timeout=120)

    def js(self, expression: str) -> Any:
        """The value of a script expression in the page (JSON-able)."""
        got = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in got:
            raise CdpError(f"{expression}: {got['exceptionDetails']}")
        return got["result"].get("value")

    def mouse(self, kind: str, x: float, y: float, button: str = "none", clicks: int = 0) -> None:
        """One mouse event at viewport CSS pixels (kind: mouseMoved, mousePressed,
        mouseReleased)."""
        self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button, clickCount=clicks)

    def drag(self, x0: float, x1: float, y: float) -> None:
        """Press at x0, move to x1 in steps, release: a drag across a chart."""
        self.mouse("mouseMoved", x0, y)
        self.mouse("mousePressed", x0, y, "left", 1)
        for k in range(1, 6):
            self.mouse("mouseMoved", x0 + (x1 - x0) * k / 5, y, "left")
        self.mouse("mouseReleased", x1, y, "left", 1)

    def double_click(self, x: float, y: float) -> None:
        """Two clicks, the second with clickCount 2 (a dblclick event)."""
        for clicks in (1, 2):
            self.mouse("mousePressed", x, y, "left", clicks)
            self.mouse("mouseReleased", x, y, "left", clicks)

    def screenshot(self, path: Path, whole_page: bool = False) -> None:
        """A PNG of the viewport, or of the whole page."""
        params: dict[str, Any] = {"format": "png"}
        if whole_page:
            size = self.js("[document.documentElement.scrollWidth, document.body.scrollHeight]")
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1},
            )
        data = self.send("Page.captureScreenshot", timeout=120, **params)["data"]
        path.write_bytes(base64.b64decode(data))

    def console(self) -> list[str]:
        """Console messages, uncaught exceptions and log entries of the page so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled":
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e["method"] == "Runtime.exceptionThrown":
                out.append(str(p["exceptionDetails"]))
            elif e["method"] == "Log.entryAdded":
                out.append(p["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        """URLs the page asked for since it was opened, its own file excepted."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
            and not e["params"]["request"]["url"].startswith("file:")
        ]

    def dialogs(self) -> list[str]:
        """Messages of the alert/confirm/prompt dialogs the page opened (script that ran)."""
        return [
            e["params"].get("message", "")
            for e in self.events
            if e["method"] == "Page.javascriptDialogOpening"
        ]
