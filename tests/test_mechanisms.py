"""The shared mechanisms each have one home; these tests pin their documented rules."""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import numpy as np
import pytest

from relusym._base.fileio import TMP_MARK, atomic_write, sweep_stale
from relusym._base.progress import Progress, progress_bar, silence, ticking
from relusym._base.rng import as_generator, as_random
from relusym.errors import OutputError


def test_rng_rule() -> None:
    assert as_generator(7).integers(1 << 30) == as_generator(7).integers(1 << 30)  # an int seed repeats
    g = np.random.default_rng(1)
    assert as_generator(g) is g  # a Generator is used as is
    r = random.Random(2)
    assert as_random(r) is r
    a, b = as_generator(random.Random(3)), as_generator(random.Random(3))
    assert a.integers(1 << 30) == b.integers(1 << 30)  # a Random seeds a Generator reproducibly
    draws = {int(as_generator(None).integers(1 << 62)) for _ in range(4)}
    assert len(draws) == 4  # None is fresh entropy
    for bad in (True, "seed", 1.5):
        with pytest.raises(TypeError, match="rng must be"):
            as_generator(bad)


def test_atomic_write_respects_the_umask_and_leaves_nothing_behind(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "a.bin", lambda fh: fh.write(b"data"))
    finally:
        os.umask(old)
    assert (tmp_path / "a.bin").read_bytes() == b"data"
    assert (tmp_path / "a.bin").stat().st_mode & 0o777 == 0o640
    with pytest.raises(OutputError, match="nothing was written"):  # a writer's failure: one sentence
        atomic_write(tmp_path / "a.bin", lambda fh: (fh.write(b"half"), (_ for _ in ()).throw(RuntimeError("x"))))
    assert (tmp_path / "a.bin").read_bytes() == b"data"  # the old file, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_stale_temporaries_of_a_killed_write_are_swept(tmp_path: Path) -> None:
    stale = tmp_path / f".out.json{TMP_MARK}dead.tmp"
    stale.write_bytes(b"partial")
    other = tmp_path / "unrelated.tmp"
    other.write_bytes(b"keep")
    sweep_stale(tmp_path, "out.json")
    assert not stale.exists() and other.exists()
    stale.write_bytes(b"partial")
    atomic_write(tmp_path / "out.json", lambda fh: fh.write(b"{}"))  # the next write sweeps its own target's
    assert not stale.exists() and (tmp_path / "out.json").read_bytes() == b"{}"


class _Terminal(io.StringIO):
    """A standard error that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_progress_is_silent_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tqdm")
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = progress_bar(total=3, desc="counting")
    assert isinstance(bar, Progress)  # stderr is not a TTY: the no-op bar
    with bar:
        bar.update(1)
        bar.set_description_str("still counting")
        bar.set_postfix_str("1 of 3")
    with ticking(0.2, desc="searching") as tick:
        tick.update(0.1)
    assert err.getvalue() == ""  # nothing at all was written to stderr
    # the same calls on a terminal do draw a bar: the silence above is the rule, not a bar that never draws
    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    with progress_bar(total=3, desc="counting") as bar:
        bar.update(1)
    assert "counting" in tty.getvalue()
    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    with progress_bar(total=3, desc="counting", progress=False) as bar:  # --quiet's rule: never, even on a terminal
        bar.update(1)
    silence()
    try:
        with progress_bar(total=3, desc="counting", progress=True) as bar:
            bar.update(1)
    finally:
        silence(False)
    assert tty.getvalue() == ""


def test_one_progress_keyword(monkeypatch: pytest.MonkeyPatch) -> None:
    """One keyword, ``progress=``, in the helpers as in the public functions: False draws nothing, True draws on
    whatever stderr is, and the older ``enabled=`` is gone (a TypeError, not a silent second spelling)."""
    pytest.importorskip("tqdm")
    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    assert isinstance(progress_bar(total=3, desc="quiet", progress=False), Progress)
    with progress_bar(total=3, desc="drawn", progress=True) as drawn:
        drawn.update(1)
    assert "drawn" in tty.getvalue() and "quiet" not in tty.getvalue()
    with ticking(0.1, desc="budget", progress=False) as tick:
        assert isinstance(tick, Progress)
    with pytest.raises(TypeError, match="enabled"):
        progress_bar(total=3, enabled=True)  # type: ignore[call-arg]
