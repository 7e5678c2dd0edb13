"""`cmem watch` as its own process for the tests that need a real watcher: started, and waited on by what it
says on stderr (its lines read by a thread, so the pipe never fills)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time


def start_watch(env: dict[str, str]) -> tuple[subprocess.Popen[str], list[str], threading.Thread]:
    """A watcher with a short debounce; the list fills with its stderr lines as they come (join the thread
    after the watcher ended to have them all)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "watch", "--debounce", "0.05"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    lines: list[str] = []
    assert proc.stderr is not None
    stderr = proc.stderr
    reader = threading.Thread(target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True)
    reader.start()
    return proc, lines, reader


def end_watch(proc: subprocess.Popen[str], lines: list[str], reader: threading.Thread) -> str:
    """All the watcher said, once it has ended (killed if it still runs: call it in a ``finally``)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    reader.join(timeout=10)
    return "".join(lines)


def wait_for_line(proc: subprocess.Popen[str], lines: list[str], text: str, *, poll: float = 0.05) -> None:
    """Until the watcher says `text` (a minute at most; a watcher that died fails at once)."""
    deadline = time.monotonic() + 60
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline and proc.poll() is None, f"no {text!r}: {lines}"
        time.sleep(poll)
