"""Headless Chromium driven over the DevTools protocol through a pipe: no driver, no download, no port.

Debian's ``chromium`` package is the browser (``find_chromium`` installs it with apt when the tests run as
root on a machine that lacks it, as CI's fresh machine does). Chromium speaks the DevTools protocol on file
descriptors 3 and 4 with ``--remote-debugging-pipe``: JSON messages ended by a NUL byte. The tests, the
README's screenshot (scripts/view_screenshot.py) and bench/view.py use this one small client.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",  # needed as root; the pages are the tests' own
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
TIMEOUT = 30.0


class ChromiumMissing(Exception):
    """No chromium here and none could be installed (one line saying why)."""


def find_chromium() -> str:
    """The path of Debian's chromium, installing the package first when it is missing and we are root.

    Several test processes may ask at once (pytest-xdist): a file lock lets one run apt while the others
    wait for it."""
    found = shutil.which("chromium") or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)
    if found:
        return found
    if os.geteuid() != 0:
        raise ChromiumMissing("chromium is not installed: run `apt-get install chromium` (needs root)")
    lock_path = Path(tempfile.gettempdir()) / "cmem-chromium-install.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.access(CHROMIUM, os.X_OK):
            _apt_install()
    if not os.access(CHROMIUM, os.X_OK):
        raise ChromiumMissing(f"apt-get installed chromium but {CHROMIUM} is not there")
    return CHROMIUM


def _apt_install() -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
    if subprocess.run(install, env=env, capture_output=True).returncode == 0:
        return
    subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)  # a fresh machine's lists
    result = subprocess.run(install, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ChromiumMissing(f"`apt-get install chromium` failed: {last}")


class ProtocolError(Exception):
    pass


class Browser:
    """One headless Chromium process; :meth:`new_page` opens a tab to drive."""

    def __init__(self, executable: str | None = None):
        self.profile = tempfile.mkdtemp(prefix="cmem-chromium-")
        ours_read, chrome_write = os.pipe()
        chrome_read, ours_write = os.pipe()
        env = {**os.environ, "TZ": "UTC", "LANG": "en_US.UTF-8", "LANGUAGE": "en_US"}
        # chromium reads fd 3 and writes fd 4; copies above 10 first, so that moving one cannot overwrite the other
        high_read, high_write = (
            fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (chrome_read, chrome_write)
        )
        self.process = subprocess.Popen(
            [executable or find_chromium(), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=lambda: (os.dup2(high_read, 3), os.dup2(high_write, 4)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        for fd in (chrome_read, chrome_write, high_read, high_write):
            os.close(fd)
        self._out = ours_write
        self._in = ours_read
        self._buffer = b""
        self._next_id = 0
        self.events: dict[str | None, list[dict[str, Any]]] = {}

    # -- the wire ------------------------------------------------------------------------------------------
    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        """Call ``method`` and wait for its result; events that arrive meanwhile are kept per session."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        reply = self._wait(lambda m: m.get("id") == self._next_id)
        if "error" in reply:
            raise ProtocolError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def wait_event(self, method: str, session: str | None, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first event ``method`` of ``session`` not yet taken (kept ones first, then new ones)."""
        kept = self.events.setdefault(session, [])
        for index, event in enumerate(kept):
            if event["method"] == method:
                return kept.pop(index)
        self._wait(lambda m: m.get("method") == method and m.get("sessionId") == session, timeout)
        return kept.pop(next(i for i, e in enumerate(kept) if e["method"] == method))

    def _wait(self, done: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, _, self._buffer = self._buffer.partition(b"\0")
                message: dict[str, Any] = json.loads(raw)
                if "method" in message:
                    self.events.setdefault(message.get("sessionId"), []).append(message)
                if done(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    raise ProtocolError("chromium closed the pipe (it crashed or exited)")
                self._buffer += chunk

    def drain(self, quiet: float = 0.05) -> None:
        """Take in the events chromium sent so far (until it has been quiet for ``quiet`` seconds)."""
        while select.select([self._in], [], [], quiet)[0]:
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                return
            self._buffer += chunk
        while b"\0" in self._buffer:
            raw, _, self._buffer = self._buffer.partition(b"\0")
            message = json.loads(raw)
            if "method" in message:
                self.events.setdefault(message.get("sessionId"), []).append(message)

    # -- pages -------------------------------------------------------------------------------------------
    def new_page(
        self, *, width: int = 1280, height: int = 800, mobile: bool = False, dark: bool = False
    ) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
        )
        page.call(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]},
        )
        return page

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._in, self._out):
            with contextlib.suppress(OSError):
                os.close(fd)
        for _ in range(50):  # chromium's helper processes may write a last file after the browser exits
            shutil.rmtree(self.profile, ignore_errors=True)
            if not os.path.exists(self.profile):
                break
            time.sleep(0.1)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


KEYS = {  # key -> (code, Windows virtual key code, text typed)
    "ArrowDown": ("ArrowDown", 40, ""),
    "ArrowUp": ("ArrowUp", 38, ""),
    "Enter": ("Enter", 13, "\r"),
    "Escape": ("Escape", 27, ""),
    "/": ("Slash", 191, "/"),
    "j": ("KeyJ", 74, "j"),
    "k": ("KeyK", 75, "k"),
}


class Page:
    """One tab: navigate, run script, press keys, click, take screenshots; what it logged is kept."""

    def __init__(self, browser: Browser, target: str, session: str):
        self.browser = browser
        self.target = target
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.browser.send(method, params, self.session)

    def goto(self, url: str) -> float:
        """Load ``url`` and wait for its load event; returns the seconds that took."""
        started = time.monotonic()
        self.call("Page.navigate", {"url": url})
        self.browser.wait_event("Page.loadEventFired", self.session)
        return time.monotonic() - started

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise ProtocolError(details.get("exception", {}).get("description") or details.get("text"))
        return result["result"].get("value")

    def press(self, key: str) -> None:
        """A real key press (keydown, char, keyup) as a person's keyboard sends it, to the focused element."""
        code, vk, text = KEYS[key]
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
        self.call(
            "Input.dispatchKeyEvent", {"type": "keyDown" if text else "rawKeyDown", **base, "text": text}
        )
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def type(self, text: str) -> None:
        """Text typed into the focused field (as an input method commits it: one input event)."""
        self.call("Input.insertText", {"text": text})

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the first element matching ``selector`` (scrolled into view)."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            )

    def screenshot(self, *, scale: float = 1.0) -> bytes:
        """A PNG of the viewport, at ``scale`` of its size (a small one is quick to check pixel by pixel)."""
        params: dict[str, Any] = {"format": "png"}
        if scale != 1.0:
            width, height = self.evaluate("[innerWidth, innerHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}
        return base64.b64decode(self.call("Page.captureScreenshot", params)["data"])

    def logged(self) -> list[dict[str, Any]]:
        """Console calls, uncaught exceptions and log entries (CSP violations among them) so far."""
        self.browser.drain()
        kept = self.browser.events.get(self.session, [])
        return [e for e in kept if e["method"] in LOG_EVENTS]

    def errors(self) -> list[str]:
        """What the page reported as an error or warning: messages, one line each."""
        out = []
        for event in self.logged():
            params = event["params"]
            if event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                out.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in (
                "error",
                "warning",
                "assert",
            ):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                out.append(params["entry"]["text"])
        return out

    def requests(self) -> list[str]:
        """The URLs of every request the page made (its own file included)."""
        self.browser.drain()
        kept = self.browser.events.get(self.session, [])
        return [e["params"]["request"]["url"] for e in kept if e["method"] == "Network.requestWillBeSent"]

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})


LOG_EVENTS = ("Runtime.exceptionThrown", "Runtime.consoleAPICalled", "Log.entryAdded")
