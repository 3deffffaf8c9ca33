"""Progress bars: tqdm on standard error, only when it is a terminal, and only when not silenced.

One keyword, ``progress=``, everywhere (the public functions and the helpers here alike): ``progress=None`` (the
default) means "show a bar if stderr is a TTY and tqdm is installed"; ``progress=False`` never shows one (the
CLI's ``--quiet``); ``progress=True`` shows one whenever tqdm is installed.  Without a bar the returned object
accepts the same calls and does nothing.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from relusym._base.deadline import Stopwatch

__all__ = ["Progress", "progress_bar", "silence", "ticking"]

_silenced = False  # set by the CLI's --quiet: no bar even when progress=None or True


def silence(on: bool = True) -> None:
    """No progress bars in this process from now on (the CLI's ``--quiet``); ``silence(False)`` undoes it."""
    global _silenced
    _silenced = on


class Progress:
    """The no-op bar (also the interface a tqdm bar offers here)."""

    def update(self, n: float = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def set_description_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _enabled(flag: bool | None) -> bool:
    if flag is False or _silenced:
        return False
    if flag is None:
        try:
            if not sys.stderr.isatty():
                return False
        except (AttributeError, ValueError):
            return False
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def progress_bar(
    total: float | None = None,
    desc: str = "",
    unit: str = "it",
    *,
    progress: bool | None = None,
    bar_format: str | None = None,
) -> Any:
    """A progress bar (``tqdm.tqdm`` on stderr) or a :class:`Progress` that does nothing."""
    if not _enabled(progress):
        return Progress()
    from tqdm import tqdm

    return tqdm(
        total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True, bar_format=bar_format
    )


@contextmanager
def ticking(seconds: float, desc: str = "", *, progress: bool | None = None) -> Iterator[Any]:
    """A bar over a time budget, for searches that run until they finish or their budget ends (flip sets, the
    width search): it shows the seconds spent of ``seconds``, refreshed twice a second by a daemon thread, and
    the caller may change its description as the search moves from stage to stage.  Same ``progress`` rule as
    :func:`progress_bar`; without a bar nothing is started."""
    fmt = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f} of {total:.1f} s budget"
    bar = progress_bar(total=round(float(seconds), 1), desc=desc, unit="s", progress=progress, bar_format=fmt)
    if isinstance(bar, Progress):
        yield bar
        return
    stop = threading.Event()
    clock = Stopwatch()

    def tick() -> None:
        shown = 0.0
        while not stop.wait(0.5):
            now = round(min(float(seconds), clock.elapsed()), 1)
            if now > shown:
                bar.update(now - shown)
                shown = now

    thread = threading.Thread(target=tick, name="relusym-progress", daemon=True)
    thread.start()
    try:
        yield bar
    finally:
        stop.set()
        thread.join()
        bar.close()
