"""One piece of work on a second thread, its result (or its error) collected later.

A search ranks the store's full-text index and the index's own one after the other, each 0.05-0.1 s at a
million observations; SQLite lets go of Python while it works, so on a second core the two overlap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``work()`` started on a daemon thread; :meth:`result` waits for it and returns its value or raises
    its exception, as calling it here would have."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="cmem-background", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def wait(self) -> None:
        """Until the work is done, whatever came of it (before leaving a caller that failed: the work
        may be using a connection the caller's caller goes on with)."""
        self._thread.join()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
