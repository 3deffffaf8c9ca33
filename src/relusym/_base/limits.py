"""Limits on untrusted input, stated once and checked before any work starts.

A network file is data someone else may have made.  Before relusym parses, allocates or computes anything it
checks that the input stays within these bounds, and refuses otherwise with one sentence that names the file, the
field and the limit (an :class:`~relusym.errors.InvalidNetworkError`, exit code 2 from the command line):

* the size of the file, per format, and of the headers inside it (a safetensors JSON header, an ``.npy`` header
  inside an NPZ, the member list of a zip archive);
* the size of one exact number: the decimal digits of a numerator or a denominator, and the decimal exponent of a
  number written like ``1e-5`` (``1e999999999`` is refused, never expanded into a billion-digit integer);
* the nesting depth of JSON documents (checked by a scan that cannot overflow the stack);
* dimensions that the file declares without holding the data for them (``"m": 1000000000`` with no rows, a
  weight of shape (0, 10^9), which holds no entries): at most ``max_declared_dim``;
* what a zip member or a compressed HDF5 dataset inflates to, against what it stores: a member that inflates more
  than ``zip_ratio`` times its compressed size (beyond 1 MiB) is a zip bomb, refused before anything is inflated;
  a header member (a Keras ``config.json``, a torch ``data.pkl``) is held to ``header_bytes``.

The defaults are generous for real models (gigabytes of weights, hundreds of digits per exact number).  They can be
changed for one block of code with :func:`limits`, for a process with the environment variable
``RELUSYM_LIMITS="max_digits=5000,json_bytes=1e9"``, and on the command line with ``--limit max_digits=5000``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from relusym.errors import InvalidNetworkError

__all__ = [
    "ZIP_ERRORS",
    "check_zip_infos",
    "Limits",
    "current",
    "limits",
    "from_spec",
    "shorten",
    "check_digits",
    "check_decimal",
    "check_json_depth",
    "parse_json",
    "file_limit",
    "check_zip",
    "npy_header",
    "check_npy_members",
    "check_shape",
    "check_ratio",
    "check_budget",
]

# what opening or listing a zip archive raises on a malformed or hostile one (a member claiming a zip version the
# standard library does not implement raises NotImplementedError): one tuple for every reader
ZIP_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    OSError,
    EOFError,
    ValueError,
)

_GiB = 1 << 30
_MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """The bounds relusym enforces on input before working on it (see the module docstring)."""

    json_bytes: int = 256 * _MiB  #: largest relusym JSON file (every number is read exactly)
    npz_bytes: int = 8 * _GiB  #: largest NPZ file (and sum of its uncompressed members)
    safetensors_bytes: int = 8 * _GiB  #: largest safetensors file
    onnx_bytes: int = 8 * _GiB  #: largest ONNX model, external data included
    torch_bytes: int = 8 * _GiB  #: largest torch.save file (and sum of its uncompressed members)
    flax_bytes: int = 2 * _GiB  #: largest Flax msgpack file (read into memory whole)
    sklearn_bytes: int = 2 * _GiB  #: largest pickle/joblib file (read only when explicitly allowed)
    nnet_bytes: int = 256 * _MiB  #: largest NNet text file (every number is read exactly)
    stdin_bytes: int = 2 * _GiB  #: largest input read from standard input (besides the format's own limit)
    header_bytes: int = 100 * _MiB  #: largest safetensors JSON header / .npy header
    zip_members: int = 100_000  #: most members of a zip archive (NPZ, torch.save)
    max_digits: int = 2000  #: most decimal digits of one numerator or denominator
    max_exponent: int = 2000  #: largest |e| of a decimal number written with an exponent (1e-5)
    max_depth: int = 64  #: deepest nesting of JSON arrays and objects (a network needs 4)
    max_declared_dim: int = 1 << 20  #: largest dimension a file declares without the data for it (m when n = 0)
    max_elements: int = 1 << 34  #: most entries of one declared tensor (checked against the bytes present)
    zip_ratio: int = 200  #: most a compressed zip member (or HDF5 dataset) may inflate, per byte stored, past 1 MiB

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InvalidNetworkError(f"the limit {f.name} must be a non-negative integer, got {shorten(v)}")

    def replace(self, **changes: Any) -> Limits:
        """A copy with some limits changed (unknown names are refused)."""
        names = {f.name for f in dataclasses.fields(self)}
        bad = sorted(set(changes) - names)
        if bad:
            raise InvalidNetworkError(f"unknown limit {bad[0]!r}; the limits are {', '.join(sorted(names))}")
        return dataclasses.replace(self, **changes)


def _parse_value(name: str, text: str) -> int:
    try:
        q = Fraction(text.strip().replace("_", ""))
    except (ValueError, ZeroDivisionError):
        raise InvalidNetworkError(f"the limit {name} must be a non-negative integer, got {shorten(text)}") from None
    if q.denominator != 1 or q < 0 or len(text) > 40:
        raise InvalidNetworkError(f"the limit {name} must be a non-negative integer, got {shorten(text)}")
    return int(q)


def from_spec(spec: str, base: Limits | None = None) -> Limits:
    """Limits from ``"name=value,name=value"`` (values may be written ``1e9`` or ``1_000``)."""
    changes: dict[str, int] = {}
    for part in (p for p in spec.split(",") if p.strip()):
        name, sep, value = part.partition("=")
        if not sep:
            raise InvalidNetworkError(f"a limit must be given as name=value, got {shorten(part)}")
        changes[name.strip()] = _parse_value(name.strip(), value)
    return (base or Limits()).replace(**changes)


def _from_env() -> Limits:
    spec = os.environ.get("RELUSYM_LIMITS", "")
    try:
        return from_spec(spec) if spec.strip() else Limits()
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"the environment variable RELUSYM_LIMITS is not usable: {exc}") from None


_current: ContextVar[Limits | None] = ContextVar("relusym_limits", default=None)


def current() -> Limits:
    """The limits in force (those set by :func:`limits`, else from ``RELUSYM_LIMITS``, else the defaults)."""
    lim = _current.get()
    if lim is None:
        lim = _from_env()
        _current.set(lim)
    return lim


def set_current(lim: Limits) -> None:
    """Make ``lim`` the limits of this context (the command line sets them once from ``--limit``)."""
    _current.set(lim)


@contextmanager
def limits(lim: Limits | None = None, **changes: Any) -> Iterator[Limits]:
    """Use other limits inside a ``with`` block: ``with limits(max_digits=10_000): load(path)``."""
    new = (lim or current()).replace(**changes) if changes else (lim or current())
    token = _current.set(new)
    try:
        yield new
    finally:
        _current.reset(token)


def file_limit(fmt: str, lim: Limits | None = None) -> int:
    """The largest file of format ``fmt`` (a format module's NAME) that is read (under ``lim``, default the limits
    in force)."""
    lim = lim or current()
    return int(getattr(lim, f"{fmt}_bytes", lim.npz_bytes))


# ----------------------------------------------------------------------------------------------------------
# messages


def shorten(value: Any, width: int = 60) -> str:
    """``repr(value)`` cut to about ``width`` characters, for messages that must not echo hostile input."""
    try:
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * width:
            return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
        text = repr(value) if not isinstance(value, str) else repr(value[: width + 10])
    except Exception:  # a repr that fails (str-to-int limits, broken objects) is not worth a traceback
        return f"a {type(value).__name__}"
    return text if len(text) <= width else text[: width - 1] + "…"


# ----------------------------------------------------------------------------------------------------------
# numbers

_DECIMAL_RE = re.compile(r"^\s*[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$")


def check_digits(digits: int, where: str, what: str = "numerator") -> None:
    """Refuse a number whose numerator or denominator would have more than ``max_digits`` digits."""
    lim = current().max_digits
    if digits > lim:
        raise InvalidNetworkError(
            f"{where} has a {what} of {digits} digits, more than the limit max_digits = {lim} "
            "(raise it with --limit max_digits=N)"
        )


def check_decimal(text: str, where: str) -> None:
    """Check a decimal or rational string before it is expanded into integers: digits and exponent within the
    limits.  Strings of other shapes pass (the parser refuses them with its own message)."""
    lim = current()
    bad = None if text.isascii() else next((ch for ch in text if ch.isdigit() and not ch.isascii()), None)
    if bad is not None:
        raise InvalidNetworkError(
            f"{where} is {shorten(text)}, written with the non-ASCII digit {bad!r} (U+{ord(bad):04X}); numbers must be "
            "written with the digits 0-9"
        )
    if "/" in text:
        for part, what in zip(text.split("/", 1), ("numerator", "denominator"), strict=True):
            check_digits(sum(ch.isdigit() for ch in part), where, what)
        return
    if len(text) > 4 * (lim.max_digits + lim.max_exponent) + 100:
        check_digits(sum(ch.isdigit() for ch in text), where)
    mt = _DECIMAL_RE.match(text)
    if mt is None:
        return
    whole, frac, exp = mt.group(1) or "", mt.group(2) or "", mt.group(3)
    if exp is not None:
        if len(exp.lstrip("+-").lstrip("0")) > len(str(lim.max_exponent)) or abs(int(exp)) > lim.max_exponent:
            raise InvalidNetworkError(
                f"{where} has the decimal exponent {shorten(exp, 24)}, beyond the limit max_exponent = "
                f"{lim.max_exponent} (no float and no sensible weight needs it)"
            )
    e = int(exp) if exp is not None else 0
    mant = (whole + frac).lstrip("0")
    check_digits(len(mant) + max(e - len(frac), 0), where)
    check_digits(max(len(frac) - e, 0), where, "denominator")


# ----------------------------------------------------------------------------------------------------------
# JSON

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def check_json_depth(text: str, where: str) -> None:
    """Refuse JSON nested deeper than ``max_depth`` (an iterative scan: it cannot hit the recursion limit)."""
    lim = current().max_depth
    depth = 0
    for tok in _TOKENS.finditer(text):
        ch = tok.group()[0]
        if ch == "[" or ch == "{":
            depth += 1
            if depth > lim:
                raise InvalidNetworkError(f"{where} nests JSON arrays/objects more than max_depth = {lim} levels deep")
        elif ch == "]" or ch == "}":
            depth -= 1


def parse_json(text: str, where: str, *, exact: bool = True) -> Any:
    """JSON within the limits: depth checked first, integers and decimals checked for size before conversion;
    with ``exact`` decimals become Fractions (``0.1`` is one tenth), else floats.  NaN and infinities are refused.
    """
    import json

    check_json_depth(text, where)

    def parse_int(s: str) -> int:
        check_digits(len(s.lstrip("-")), where)
        return int(s)

    def parse_float(s: str) -> Any:
        check_decimal(s, where)
        return Fraction(s) if exact else float(s)

    def parse_constant(name: str) -> Any:
        # kept as the string "NaN"/"Infinity": the reader of the array refuses it naming the array and the index
        return name

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise InvalidNetworkError(
                    f"{where} has the key {shorten(key)} twice in one JSON object; which one is meant is ambiguous"
                )
            out[key] = value
        return out

    try:
        return json.loads(
            text,
            parse_int=parse_int,
            parse_float=parse_float,
            parse_constant=parse_constant,
            object_pairs_hook=no_duplicates,
        )
    except json.JSONDecodeError as exc:
        raise InvalidNetworkError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:  # pragma: no cover - excluded by the depth scan
        raise InvalidNetworkError(f"{where} nests JSON too deeply") from None


# ----------------------------------------------------------------------------------------------------------
# archives


_RATIO_FLOOR = 1 << 20  # members inflating to at most 1 MiB are never zip bombs worth refusing


def check_ratio(inflated: int, stored: int, where: str) -> None:
    """Refuse data that inflates to more than ``zip_ratio`` times the bytes it stores (beyond 1 MiB): a zip bomb,
    a compressed HDF5 dataset of zeros, or a dataset declared with no storage at all."""
    lim = current().zip_ratio
    if inflated > _RATIO_FLOOR and inflated > lim * max(stored, 1):
        raise InvalidNetworkError(
            f"{where} inflates {stored} stored bytes to {inflated}, more than the limit zip_ratio = {lim} times "
            f"(a zip bomb?); refused before inflating (raise it with --limit zip_ratio=N)"
        )


def check_zip(path: Any, fmt: str, *, headers: tuple[str, ...] = ()) -> list[Any]:
    """The members of a zip archive (NPZ, torch.save, .keras), after checking their number, each member's
    inflated size against its compressed size (``zip_ratio``), the members named in ``headers`` (exact names or
    ``/name`` endings) against ``header_bytes``, and their total uncompressed size against the format's limit: a
    zip bomb is refused before anything is inflated."""
    import zipfile

    name = getattr(path, "name", str(path))
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except ZIP_ERRORS as exc:
        raise InvalidNetworkError(f"{name} is not a readable zip archive (truncated or corrupted?): {exc}") from None
    return check_zip_infos(infos, name, fmt, headers=headers)


def check_zip_infos(infos: list[Any], name: str, fmt: str, *, headers: tuple[str, ...] = ()) -> list[Any]:
    """:func:`check_zip` on the members (``zipfile.ZipInfo``) of an archive already open, named ``name``."""
    import zipfile

    lim = current()
    if len(infos) > lim.zip_members:
        raise InvalidNetworkError(
            f"{name} has {len(infos)} zip members, more than the limit zip_members = {lim.zip_members}"
        )
    for info in infos:
        member = f"{name}: the zip member {shorten(info.filename)}"
        if info.flag_bits & 0x1:
            raise InvalidNetworkError(f"{member} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
            raise InvalidNetworkError(f"{member} uses the unknown compression {info.compress_type}")
        if any(info.filename == h or info.filename.endswith("/" + h) for h in headers):
            if info.file_size > lim.header_bytes:
                raise InvalidNetworkError(
                    f"{member} inflates to {info.file_size} bytes, more than the limit header_bytes = "
                    f"{lim.header_bytes} (raise it with --limit header_bytes=N)"
                )
        if info.compress_type != zipfile.ZIP_STORED:
            check_ratio(info.file_size, info.compress_size, member)
    total = sum(i.file_size for i in infos)
    cap = file_limit(fmt)
    if total > cap:
        raise InvalidNetworkError(
            f"{name} inflates to {total} bytes, more than the limit {fmt}_bytes = {cap} (raise it with "
            f"--limit {fmt}_bytes=N)"
        )
    return infos


def check_shape(shape: Any, where: str) -> tuple[int, ...]:
    """A declared tensor shape within the limits: non-negative dimensions, at most ``max_elements`` entries, and,
    when it holds no entries (a dimension 0), no dimension beyond ``max_declared_dim`` (a weight of shape
    (0, 10^9) holds no data, so nothing backs its 10^9)."""
    dims = tuple(int(d) for d in shape)
    lim = current()
    if any(d < 0 for d in dims):
        raise InvalidNetworkError(f"{where} has the negative dimension {min(dims)} in its shape {shorten(dims)}")
    count = math.prod(dims)
    if count > lim.max_elements:
        raise InvalidNetworkError(
            f"{where} declares {count} entries, more than the limit max_elements = {lim.max_elements}"
        )
    if count == 0 and max(dims, default=0) > lim.max_declared_dim:
        raise InvalidNetworkError(
            f"{where} has the shape {shorten(dims)}, which holds no entries; a dimension with no data behind it "
            f"must be at most max_declared_dim = {lim.max_declared_dim}"
        )
    return dims


def check_budget(budget: Any, what: str = "budget", *, positive: bool = False) -> float:
    """The one check of every time budget: a finite non-negative number of seconds (not NaN, not a boolean);
    ``positive=True`` refuses 0 too (a census chunk that may not spend any time cannot do any work)."""
    import numbers

    seconds = float(budget) if isinstance(budget, numbers.Real) and not isinstance(budget, bool) else math.nan
    if not (math.isfinite(seconds) and (seconds > 0 if positive else seconds >= 0)):
        sign = "positive" if positive else "non-negative"
        raise InvalidNetworkError(f"{what} must be a finite {sign} number of seconds, got {shorten(budget)}")
    return seconds


# the header dict numpy writes (``{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`` padded with
# spaces): read by this pattern; anything else by numpy's own parser (an ``ast.literal_eval``, which compiles
# the header, most of the cost of reading one)
_NPY_DICT = re.compile(
    r"\{'descr': '([<>|=]?[a-zA-Z][0-9]*)', 'fortran_order': (True|False), "
    r"'shape': \(((?:(?:0|[1-9][0-9]*), )*(?:0|[1-9][0-9]*)?,?)\), \} *\n?\Z"
)


def npy_header(fh: Any, version: tuple[int, int], max_header_size: int) -> tuple[tuple[int, ...], bool, Any]:
    """``(shape, fortran_order, dtype)`` of an ``.npy`` header, ``fh`` just after its magic and ``version`` (as
    ``numpy.lib.format.read_magic`` leaves it), and ``fh`` left at the data: what ``read_array_header_1_0`` or
    ``_2_0`` returns, with the same errors (numpy's own parser reads every header but the plain ones numpy
    writes)."""
    import io

    import numpy as np
    from numpy.lib import format as npformat

    if version not in ((1, 0), (2, 0)):
        return npformat.read_array_header_2_0(fh, max_header_size=max_header_size)
    width = 2 if version == (1, 0) else 4
    raw = fh.read(width)
    header = b""
    if len(raw) == width:
        length = int.from_bytes(raw, "little")
        if length <= max_header_size:
            header = fh.read(length)
            found = _NPY_DICT.match(header.decode("latin1")) if len(header) == length else None
            if found is not None and found.group(1)[-1:] not in ("O", "V"):
                try:
                    dtype = np.dtype(found.group(1))
                except TypeError:
                    dtype = None
                if dtype is not None and dtype.str.lstrip("<>|=") == found.group(1).lstrip("<>|="):
                    shape = tuple(int(x) for x in found.group(3).replace(",", " ").split())
                    return shape, found.group(2) == "True", dtype
    reader = npformat.read_array_header_1_0 if version == (1, 0) else npformat.read_array_header_2_0
    return reader(io.BytesIO(raw + header), max_header_size=max_header_size)


def check_npy_members(path: Any, *, allow_objects: bool = False) -> None:
    """Every ``.npy`` member of an NPZ: a header within the limits whose shape and dtype need exactly the bytes
    the member holds (so a declared 2^32 × 2^32 array with no data is refused before it is allocated)."""
    import zipfile

    from numpy.lib import format as npformat

    lim = current()
    name = getattr(path, "name", str(path))
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            where = f"{name}: array {shorten(info.filename[:-4])}"
            try:
                with zf.open(info) as fh:
                    version = npformat.read_magic(fh)
                    if version not in ((1, 0), (2, 0)):
                        raise InvalidNetworkError(f"{where} has the unknown .npy version {version}")
                    shape, _fortran, dtype = npy_header(fh, version, min(lim.header_bytes, 1 << 20))
                    header_len = fh.tell()
            except InvalidNetworkError:
                raise
            except (ValueError, EOFError, OSError, SyntaxError, zipfile.BadZipFile, RuntimeError) as exc:
                raise InvalidNetworkError(f"{where} has an unreadable .npy header: {shorten(str(exc), 100)}") from None
            if dtype.hasobject:
                if allow_objects:  # a pickle the caller chose to run: its size is not declared in the header
                    continue
                raise InvalidNetworkError(
                    f"{where} holds Python objects (a pickle); relusym reads only numeric arrays and never unpickles"
                )
            count = math.prod(check_shape(shape, where))
            if count * dtype.itemsize != info.file_size - header_len:
                raise InvalidNetworkError(
                    f"{where} declares shape {shorten(shape)} of {dtype} ({count * dtype.itemsize} bytes) but holds "
                    f"{info.file_size - header_len} bytes (truncated or corrupted)"
                )
