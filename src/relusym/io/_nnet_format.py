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
in rationals read exactly from the decimal text (for L > 2 layers, the first layer takes the input
normalisation and the last the output one, the layers between stay as written).  The clamping is not affine:
it is left out of the realization map (a :class:`~relusym.errors.NNetClampWarning` says so), and the bounds are
available as a box with ``relusym.io.input_box(path)``, for ``equivalent(..., domain=...)`` and
``relusym equiv --box-from``.  One hidden layer (L = 2) reads as a ``Network``, more (the ACAS Xu networks have
six) as an ``MLP``.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import check_decimal, shorten
from relusym._bounded.domain import Box
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym._exact.numbers import fractions_of
from relusym.errors import InvalidNetworkError, NNetClampWarning, NotRepresentableError, UnsupportedModelError
from relusym.io._layers import affine_layers, widths_of

__all__ = ["NAME", "SUFFIXES", "RECORDS_ACTIVATION", "sniff", "load", "read", "save", "input_bounds", "input_box"]

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
        self.header: list[str] = []
        header = True
        for no, line in enumerate(text.splitlines(), start=1):
            s = line.strip()
            if header and s.startswith("//"):
                self.header.append(s)
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

    def values(self, what: str, count: int, *, at_least: bool = False) -> list[Fraction]:
        no, s = self.raw(what)
        parts = [p.strip() for p in s.split(",")]
        if parts and parts[-1] == "":
            parts = parts[:-1]
        if len(parts) != count and not (at_least and len(parts) > count):
            least = "at least " if at_least else ""
            raise InvalidNetworkError(
                f"{self.path}, line {no}: the {what} should have {least}{count} value(s), found {len(parts)}"
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
    if L < 2:
        raise UnsupportedModelError(
            f"{path} has {L} layer(s) of weights, so no hidden layer; relusym reads ReLU networks with at least one"
        )
    nl, m, k, _ = src.integers("line of sizes (layers, inputs, outputs, largest layer)", 4)
    sizes = src.integers("line of layer sizes", nl + 1)
    if sizes[0] != m or sizes[-1] != k:
        raise InvalidNetworkError(
            f"{path}: the layer sizes {sizes} do not start with the {m} inputs and end with the {k} outputs"
        )
    src.raw("flag line")
    # the ACAS Xu files list 7 state variables for their 5 inputs (and the output's mean and range last): as the
    # NNet readers do (sisl/NNet, Marabou), the first m entries are the inputs', the last mean and range the outputs'
    first_norm = src.pos
    mins = src.values("line of input minima", m, at_least=True)
    maxs = src.values("line of input maxima", m, at_least=True)
    means = src.values("line of means (inputs, then outputs)", m + 1, at_least=True)
    ranges = src.values("line of ranges (inputs, then outputs)", m + 1, at_least=True)
    counts = {len(mins) - m, len(maxs) - m, len(means) - m - 1, len(ranges) - m - 1}
    if len(counts) != 1:
        raise InvalidNetworkError(
            f"{path}: the lines of input minima, maxima, means and ranges hold {len(mins)}, {len(maxs)}, "
            f"{len(means)} and {len(ranges)} values, which is not m = {m} (m + 1 = {m + 1} for the means and ranges) "
            "plus the same number of extra entries on each"
        )
    extras = counts.pop()
    mins, maxs = mins[:m], maxs[:m]
    means, ranges = means[:m] + means[-1:], ranges[:m] + ranges[-1:]
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
    return {
        "m": m,
        "k": k,
        "mins": mins,
        "maxs": maxs,
        "means": means,
        "ranges": ranges,
        "layers": layers,
        "extras": extras,
        "header": list(src.header),
        "norm_lines": [s for _, s in src.lines[first_norm : first_norm + 4]],
    }


def input_bounds(path: str | Path) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """The input minima and maxima of an NNet file, exactly (the box its inputs are clamped to)."""
    d = _read(Path(path))
    return tuple(d["mins"]), tuple(d["maxs"])


def input_box(path: str | Path) -> Box:
    """The box an NNet file clamps its inputs to, for ``equivalent(..., domain=...)``."""
    lo, hi = input_bounds(path)
    return Box(list(lo), list(hi))


def read(path: Path) -> tuple[Network | MLP, tuple[str, ...], bool]:
    """:func:`load`, with a note when the normalisation lines carry entries beyond the inputs (ACAS Xu)."""
    d = _read(Path(path))
    net = _network(d, Path(path))
    notes: tuple[str, ...] = ()
    extras = d["extras"]
    if extras:
        notes = (
            f"{Path(path).name}: its lines of input minima, maxima, means and ranges carry {extras} entries beyond "
            f"the {net.m} inputs (state variables that select the network, as in ACAS Xu); as the NNet readers do, "
            "the first entries are the inputs' and the last mean and range the outputs'",
        )
    return net, notes, True


def load(path: Path) -> Network | MLP:
    return _network(_read(Path(path)), Path(path))


def _network(d: dict[str, Any], path: Path) -> Network | MLP:
    m, k = d["m"], d["k"]
    means, ranges = d["means"], d["ranges"]
    layers = list(d["layers"])
    W1, b1 = layers[0]
    n = len(b1)
    A = [[W1[i][j] / ranges[j] for j in range(m)] for i in range(n)]
    b = [b1[i] - sum((W1[i][j] * means[j] / ranges[j] for j in range(m)), Fraction(0)) for i in range(n)]
    layers[0] = (A, b)
    WL, bL = layers[-1]
    ro, mo = ranges[m], means[m]
    V = [[ro * x for x in row] for row in WL]
    c = [ro * bL[r] + mo for r in range(k)]
    layers[-1] = (V, c)
    if any(abs(v) < Fraction(10) ** 300 for v in d["mins"] + d["maxs"]):
        warnings.warn(
            f"{path}: the NNet clamping of the inputs to [min, max] is not part of the function relusym compares "
            "(compare on that box with domain=relusym.io.input_box(path) or relusym equiv --box-from)",
            NNetClampWarning,
            stacklevel=4,
        )
    try:
        if len(layers) == 2:
            return Network(V, layers[0][0], layers[0][1], c, m=m)
        return MLP([W for W, _ in layers], [bias for _, bias in layers])
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


def _unfold(exact: list[tuple[Any, Any, str, str]], d: dict[str, Any]) -> list[tuple[Any, Any, str, str]] | None:
    """The layers as an NNet file with ``d``'s normalisation stores them (W₁·diag(range), b₁ + W₁·mean for the
    first layer, (W_L, b_L − mean_out)/range_out for the last), exactly (some values may have no finite decimal
    expansion); None when the input or output count differs."""
    import numpy as np

    m = d["m"]
    means, ranges = d["means"], d["ranges"]
    (A, b, an, bn) = exact[0]
    if A.shape[1] != m or exact[-1][0].shape[0] != d["k"]:
        return None
    W1 = np.array([[Fraction(A[i, j]) * ranges[j] for j in range(m)] for i in range(A.shape[0])], dtype=object).reshape(
        A.shape
    )
    b1 = np.array(
        [Fraction(b[i]) + sum((Fraction(A[i, j]) * means[j] for j in range(m)), Fraction(0)) for i in range(len(b))],
        dtype=object,
    )
    out = list(exact)
    out[0] = (W1, b1, an, bn)
    V, c, vn, cn = out[-1]
    ro, mo = ranges[m], means[m]
    WL = np.array([Fraction(x) / ro for x in V.ravel().tolist()], dtype=object).reshape(V.shape)
    bL = np.array([(Fraction(x) - mo) / ro for x in c.tolist()], dtype=object)
    out[-1] = (WL, bL, vn, cn)
    return out


def _not_decimal(layers: list[tuple[Any, Any, str, str]]) -> list[tuple[str, tuple[int, ...], Fraction]]:
    """(array name, index, value) of the first entry without a finite decimal expansion in each array."""
    found = []
    for W, B, wn, bn in layers:
        for name, arr in ((wn, W), (bn, B)):
            for idx, v in np.ndenumerate(arr):
                if _decimal(Fraction(v)) is None:
                    found.append((name, tuple(int(i) for i in idx), Fraction(v)))
                    break
    return found


def save(
    net: Network | MLP,
    path: Path,
    like: Path | None = None,
    *,
    allow_rounding: bool = False,
    bounds: tuple[Any, Any] | None = None,
    policy: Any = None,
) -> None:
    """Write θ as an NNet file with mean 0 and range 1 (no normalisation), so every value is written exactly; a
    deep network (an ``MLP``) as its L layers.

    With ``like`` an NNet file (and no ``bounds``), its header, input box and normalisation are kept when the
    network's first and last layers, unfolded from that normalisation, have finite decimal expansions (as a
    network read from that file, pruned or not, does); else the normalisation is mean 0 and range 1.  The input
    minima and maxima are ``bounds`` when given, else ``like``'s, else ±1e308 (no input is clamped).  ``policy``
    is the writers' rounding policy (``relusym.io.save`` passes it): its ``allow_rounding`` applies, the arrays it
    rounds are recorded in it, and a ``dtype`` does not apply (NNet is decimal text)."""
    if policy is not None:
        if policy.dtype is not None:
            raise InvalidNetworkError(f"NNet files hold decimal text, so dtype={policy.dtype!r} does not apply")
        allow_rounding = policy.allow_rounding
    ours = affine_layers(net)
    widths = widths_of(net)
    m = widths[0]
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
    exact = [(fractions_of(W), fractions_of(B), wn, bn) for W, B, wn, bn in ours]
    L = len(ours)
    kind = "one-hidden-layer" if L == 2 else f"{L - 1}-hidden-layer"
    kept: list[str] = []
    mine = f"// {kind} ReLU network written by relusym ({{}}, mean 0, range 1)"
    norm = [
        ",".join(mins) + ",",
        ",".join(maxs) + ",",
        ",".join(["0"] * (m + 1)) + ",",
        ",".join(["1"] * (m + 1)) + ",",
    ]
    if bounds is None and like is not None and like.suffix.lower() == ".nnet" and like.exists():
        # the like file's own rows: its header and normalisation lines (ACAS Xu's extra entries included) are
        # kept, and the layers are stored as that normalisation needs them (a network read from that file, pruned
        # with its own scales, gives back the file's decimals)
        d = _read(like)
        unfolded = _unfold(exact, d)
        if unfolded is not None and (not _not_decimal(unfolded) or _not_decimal(exact) or allow_rounding):
            exact = unfolded
            kept = list(d["header"])
            mine = f"// written by relusym ({{}}) with the input box and normalisation of {like.name}"
            norm = list(d["norm_lines"])
        elif unfolded is not None and policy is not None:
            name, idx, v = _not_decimal(unfolded)[0]
            policy.notes.append(
                f"the normalisation of {like.name} is not kept: under it {name}[{', '.join(map(str, idx))}] would be "
                f"{v}, which has no finite decimal expansion; the file has mean 0 and range 1 and holds the network "
                "exactly"
            )
    bad = _not_decimal(exact)
    if bad and not allow_rounding:
        name, idx, v = bad[0]
        raise NotRepresentableError(
            f"cannot write {path}: {name}[{', '.join(map(str, idx))}] = {v} has no finite decimal expansion, so "
            "NNet text cannot hold it exactly; save as JSON to keep it exact, or allow rounding (CLI --allow-rounding)"
        )
    if policy is not None:
        policy.rounded.extend(dict.fromkeys(name for name, _, _ in bad))
    spelled = "decimals rounded to double precision" if bad else "exact decimals"
    out = [*kept, mine.format(spelled)]

    def row(values: list[Any], name: str) -> str:
        return ",".join(_spell(Fraction(v), allow_rounding, name, path) for v in values) + ","

    out.append(f"{L},{m},{widths[-1]},{max(widths)},")
    out.append(",".join(str(w) for w in widths) + ",")
    out.append("0,")
    out.extend(norm)
    for W, B, wn, bn in exact:
        for i in range(W.shape[0]):
            out.append(row(W[i].tolist(), f"{wn}[{i}]"))
        for i in range(W.shape[0]):
            out.append(row([B[i]], f"{bn}[{i}]"))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
