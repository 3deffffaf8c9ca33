"""The NNet text format (``.nnet``: ACAS Xu, Reluplex/Marabou, ReluDiff, NNV), read as data and written exactly.

A file is, line by line (each line may end with a comma):

1. header lines, each beginning with ``//``;
2. four integers: the number of layers L (weight matrices), the input size, the output size, the largest size;
3. the L + 1 layer sizes, from the input to the output;
4. a flag (no longer used);
5. the minimum of each input, 6. the maximum of each input;
7. the mean of each input and one mean for all outputs, 8. the range of each input and one for all outputs;
9. for each layer: its weight matrix, one row per line, then its biases, one per line.

The network it describes clamps each input to [min, max], normalises x̃ = (x − mean)/range, applies the layers
(ReLU on the hidden ones) and returns y·range_out + mean_out.  The normalisations are affine, so they fold
exactly into θ: A = W₁·diag(1/range), b = b₁ − W₁·(mean/range), V = range_out·W₂, c = range_out·b₂ + mean_out,
in rationals read exactly from the decimal text.  The clamping is not affine: it is left out of the
realization map (a :class:`~relusym.errors.NNetClampWarning` says so), and the bounds are available as a box
with ``relusym.io.input_box(path)``, for ``equivalent(..., domain=...)`` and
``relusym equiv --box-from``.  Only one hidden layer (L = 2) is a network here.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

from relusym._base.limits import check_decimal, shorten
from relusym._bounded.domain import Box
from relusym._core.network import Network
from relusym._exact.numbers import fractions_of
from relusym.errors import InvalidNetworkError, NNetClampWarning, UnsupportedModelError

__all__ = ["NAME", "SUFFIXES", "RECORDS_ACTIVATION", "sniff", "load", "save", "input_bounds", "input_box"]

NAME = "nnet"
RECORDS_ACTIVATION = True  # the format defines ReLU hidden layers
SUFFIXES = (".nnet",)

# bounds written when the network carries none: no double-precision input is ever clamped
_NO_CLAMP = "1e308"


def sniff(path: Path, head: bytes) -> bool:
    return head.lstrip().startswith(b"//")


class _Lines:
    """The file's data lines (header skipped), each split into exact decimal values, with line numbers."""

    def __init__(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InvalidNetworkError(f"{path} is not a UTF-8 text file") from None
        self.path = path
        self.lines: list[tuple[int, str]] = []
        header = True
        for no, line in enumerate(text.splitlines(), start=1):
            s = line.strip()
            if header and s.startswith("//"):
                continue
            header = False
            if s:
                self.lines.append((no, s))
        self.pos = 0

    def raw(self, what: str) -> tuple[int, str]:
        if self.pos >= len(self.lines):
            raise InvalidNetworkError(f"{self.path} ends before the {what}")
        item = self.lines[self.pos]
        self.pos += 1
        return item

    def values(self, what: str, count: int) -> list[Fraction]:
        no, s = self.raw(what)
        parts = [p.strip() for p in s.split(",")]
        if parts and parts[-1] == "":
            parts = parts[:-1]
        if len(parts) != count:
            raise InvalidNetworkError(
                f"{self.path}, line {no}: the {what} should have {count} value(s), found {len(parts)}"
            )
        out = []
        for p in parts:
            check_decimal(p, f"{self.path}, line {no}: the {what}")  # "1e999999999" is refused, not expanded
            try:
                q = Fraction(p)
            except (ValueError, ZeroDivisionError):
                raise InvalidNetworkError(
                    f"{self.path}, line {no}: {shorten(p)} in the {what} is not a number"
                ) from None
            out.append(q)
        return out

    def integers(self, what: str, count: int) -> list[int]:
        vals = self.values(what, count)
        if any(v.denominator != 1 or v < 0 for v in vals):
            no = self.lines[self.pos - 1][0]
            raise InvalidNetworkError(f"{self.path}, line {no}: the {what} must be nonnegative integers")
        return [int(v) for v in vals]


def _read(path: Path) -> dict[str, Any]:
    """The file's contents as exact rationals: sizes, bounds, normalisation and the layers."""
    src = _Lines(path)
    no = src.lines[0][0] if src.lines else 0
    first = src.raw("line of sizes")
    src.pos -= 1
    parts = [p for p in (x.strip() for x in first[1].split(",")) if p]
    if not parts:
        raise InvalidNetworkError(f"{path}: no data after the header")
    try:
        L = int(parts[0])
    except ValueError:
        raise InvalidNetworkError(f"{path}, line {no}: the number of layers {parts[0]!r} is not an integer") from None
    if L != 2:
        raise UnsupportedModelError(
            f"{path} has {L} layer(s) of weights ({L - 1} hidden layer(s)); relusym handles one hidden layer only"
        )
    nl, m, k, _ = src.integers("line of sizes (layers, inputs, outputs, largest layer)", 4)
    sizes = src.integers("line of layer sizes", nl + 1)
    if sizes[0] != m or sizes[-1] != k:
        raise InvalidNetworkError(
            f"{path}: the layer sizes {sizes} do not start with the {m} inputs and end with the {k} outputs"
        )
    src.raw("flag line")
    mins = src.values("line of input minima", m)
    maxs = src.values("line of input maxima", m)
    means = src.values("line of means (inputs, then outputs)", m + 1)
    ranges = src.values("line of ranges (inputs, then outputs)", m + 1)
    layers = []
    for li in range(nl):
        rows, cols = sizes[li + 1], sizes[li]
        W = [src.values(f"row {r} of the weights of layer {li + 1}", cols) for r in range(rows)]
        bias = [src.values(f"bias {r} of layer {li + 1}", 1)[0] for r in range(rows)]
        layers.append((W, bias))
    if src.pos != len(src.lines):
        extra = src.lines[src.pos][0]
        raise InvalidNetworkError(f"{path}, line {extra}: unexpected data after the last layer")
    for j, r in enumerate(ranges):
        if r == 0:
            what = f"input {j}" if j < m else "the outputs"
            raise InvalidNetworkError(f"{path}: the range of {what} is 0, so the normalisation divides by zero")
    for j, (lo, hi) in enumerate(zip(mins, maxs, strict=True)):
        if lo > hi:
            raise InvalidNetworkError(f"{path}: input {j} has minimum {lo} above its maximum {hi}")
    return {"m": m, "k": k, "mins": mins, "maxs": maxs, "means": means, "ranges": ranges, "layers": layers}


def input_bounds(path: str | Path) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """The input minima and maxima of an NNet file, exactly (the box its inputs are clamped to)."""
    d = _read(Path(path))
    return tuple(d["mins"]), tuple(d["maxs"])


def input_box(path: str | Path) -> Box:
    """The box an NNet file clamps its inputs to, for ``equivalent(..., domain=...)``."""
    lo, hi = input_bounds(path)
    return Box(list(lo), list(hi))


def load(path: Path) -> Network:
    d = _read(path)
    m, k = d["m"], d["k"]
    means, ranges = d["means"], d["ranges"]
    (W1, b1), (W2, b2) = d["layers"]
    n = len(b1)
    A = [[W1[i][j] / ranges[j] for j in range(m)] for i in range(n)]
    b = [b1[i] - sum((W1[i][j] * means[j] / ranges[j] for j in range(m)), Fraction(0)) for i in range(n)]
    ro, mo = ranges[m], means[m]
    V = [[ro * W2[r][i] for i in range(n)] for r in range(k)]
    c = [ro * b2[r] + mo for r in range(k)]
    if any(abs(v) < Fraction(10) ** 300 for v in d["mins"] + d["maxs"]):
        warnings.warn(
            f"{path}: the NNet clamping of the inputs to [min, max] is not part of the function relusym compares "
            "(compare on that box with domain=relusym.io.input_box(path) or relusym equiv --box-from)",
            NNetClampWarning,
            stacklevel=4,
        )
    try:
        return Network(V, A, b, c, m=m)
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"{path}: {exc}") from None


def _decimal(q: Fraction) -> str | None:
    """The exact decimal spelling of q, or None when q has no finite decimal expansion."""
    den = q.denominator
    a = (den & -den).bit_length() - 1
    rest = den >> a
    b = 0
    while rest % 5 == 0:
        rest //= 5
        b += 1
    if rest != 1:
        return None
    e = max(a, b)
    num = abs(q.numerator) * (10**e // den)
    digits = str(num)
    sign = "-" if q < 0 else ""
    if e == 0:
        return sign + digits
    digits = digits.rjust(e + 1, "0")
    whole, frac = digits[:-e], digits[-e:].rstrip("0")
    return sign + whole + ("." + frac if frac else "")


def _spell(q: Fraction, allow_rounding: bool, where: str, path: Path) -> str:
    s = _decimal(q)
    if s is not None:
        return s
    if allow_rounding:
        return repr(float(q))
    raise InvalidNetworkError(
        f"cannot write {path}: {where} = {q} has no finite decimal expansion, so NNet text cannot hold it exactly "
        "(save as JSON to keep it exact, or allow rounding)"
    )


def save(
    net: Network,
    path: Path,
    like: Path | None = None,
    *,
    allow_rounding: bool = False,
    bounds: tuple[Any, Any] | None = None,
    policy: Any = None,
) -> None:
    """Write θ as an NNet file with mean 0 and range 1 (no normalisation), so every value is written exactly.

    The input minima and maxima are ``bounds`` when given, else ``like``'s (an NNet file), else ±1e308 (no
    input is clamped).  ``policy`` is the writers' rounding policy (``relusym.io.save`` passes it): its
    ``allow_rounding`` applies, the arrays it rounds are recorded in it, and a ``dtype`` does not apply (NNet is
    decimal text)."""
    if policy is not None:
        if policy.dtype is not None:
            raise InvalidNetworkError(f"NNet files hold decimal text, so dtype={policy.dtype!r} does not apply")
        allow_rounding = policy.allow_rounding
    m, n, k = net.shape
    if bounds is not None:
        lo_b = [Fraction(x) for x in (bounds[0] if isinstance(bounds[0], list | tuple) else [bounds[0]] * m)]
        hi_b = [Fraction(x) for x in (bounds[1] if isinstance(bounds[1], list | tuple) else [bounds[1]] * m)]
        mins = [_spell(v, allow_rounding, f"min[{j}]", path) for j, v in enumerate(lo_b)]
        maxs = [_spell(v, allow_rounding, f"max[{j}]", path) for j, v in enumerate(hi_b)]
    elif like is not None and like.suffix.lower() == ".nnet" and like.exists():
        lo_l, hi_l = input_bounds(like)
        if len(lo_l) != m:
            raise InvalidNetworkError(f"cannot write {path}: {like} has {len(lo_l)} inputs, the network has {m}")
        mins = [_spell(v, True, "min", path) for v in lo_l]
        maxs = [_spell(v, True, "max", path) for v in hi_l]
    else:
        mins, maxs = ["-" + _NO_CLAMP] * m, [_NO_CLAMP] * m
    A, b, V, c = (fractions_of(x) for x in (net.A, net.b, net.V, net.c))
    if policy is not None and allow_rounding:
        for name, arr in (("A", A), ("b", b), ("V", V), ("c", c)):
            if any(_decimal(Fraction(v)) is None for v in arr.ravel().tolist()):
                policy.rounded.append(name)

    def row(values: list[Any], name: str) -> str:
        return ",".join(_spell(Fraction(v), allow_rounding, name, path) for v in values) + ","

    out = ["// one-hidden-layer ReLU network written by relusym (exact decimals, mean 0, range 1)"]
    out.append(f"2,{m},{k},{max(m, n, k)},")
    out.append(f"{m},{n},{k},")
    out.append("0,")
    out.append(",".join(mins) + ",")
    out.append(",".join(maxs) + ",")
    out.append(",".join(["0"] * (m + 1)) + ",")
    out.append(",".join(["1"] * (m + 1)) + ",")
    for i in range(n):
        out.append(row(A[i].tolist(), f"A[{i}]"))
    for i in range(n):
        out.append(row([b[i]], f"b[{i}]"))
    for r in range(k):
        out.append(row(V[r].tolist(), f"V[{r}]"))
    for r in range(k):
        out.append(row([c[r]], f"c[{r}]"))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
