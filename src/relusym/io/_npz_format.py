"""numpy files: ``.npz`` archives and dicts of arrays, read as data (``allow_pickle=False``).

relusym's own layout names the arrays ``V``, ``A``, ``b``, ``c`` (interfaces.md); a deep network is written
under nn.Sequential's names ``0.weight, 0.bias, 2.weight, …``.  Other usual namings are read too: ``W1/b1/W2/b2``
(or ``w0``, ``weights_0``, ...), torch's ``<layer>.weight``/``<layer>.bias`` (out×in) and ``kernel``/``bias``
(in×out, Keras and Flax, also as flat ``Dense_0/kernel`` keys).  For names that do not say the orientation, it is
found from the shapes: the layers must chain (m → n → k, or m → n_1 → … → k in the names' natural order for a
deep network) and the biases must have the matching sizes; when both orientations fit (square weights), the
reader refuses and asks for ``layout="out_in"`` (torch) or ``layout="in_out"`` (Keras, Flax, scikit-learn).  An
``.npy`` file holding a dict is an object array, which numpy can read only by unpickling; that needs
``allow_unsafe_pickle=True``.
"""

from __future__ import annotations

import io
import math
import pickle
import re
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import ZIP_ERRORS, check_npy_members, check_zip, check_zip_infos, npy_header
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    WritePolicy,
    affine_layers,
    chain_linear_layers,
    check_depth,
    exact_float_array,
    layout_arrays,
    natural_key,
    shaped,
    standard_arrays,
)
from relusym.io._opened import snapshot

__all__ = ["NAME", "SUFFIXES", "RECORDS_ACTIVATION", "sniff", "load", "read", "save", "from_arrays"]

NAME = "npz"
SUFFIXES = (".npz", ".npy")
RECORDS_ACTIVATION = False

_NPY_MAGIC = b"\x93NUMPY"
_OWN = ("V", "A", "b", "c")


def sniff(path: Path, head: bytes) -> bool:
    if head.startswith(_NPY_MAGIC):
        return True
    if not head.startswith(b"PK"):
        return False
    snap = snapshot(path)
    try:
        if snap is not None:  # the archive parsed once, here, for the reader too
            zf = snap.cache["zip"] = zipfile.ZipFile(io.BytesIO(snap.data))
            names = zf.namelist()
        else:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
    except ZIP_ERRORS:
        return path.suffix.lower() == ".npz"
    return bool(names) and all(n.endswith(".npy") for n in names)


def _pickle_refusal(path: Path) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"{path.name} holds a Python object array, which numpy can only read by unpickling it (and unpickling "
        "runs code from the file); if you trust it, pass allow_unsafe_pickle=True (CLI --allow-unsafe-pickle), "
        "or save the arrays with np.savez(path, **arrays)"
    )


class _Named:
    """A file handle whose ``name`` is the file's base name: the checks of :mod:`relusym._base.limits` name a
    file by its ``name`` as they do for a ``Path``."""

    def __init__(self, fh: Any, name: str) -> None:
        self._fh, self.name = fh, name
        self.read, self.seek, self.tell = fh.read, fh.seek, fh.tell  # zipfile's calls, without __getattr__

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._fh, attr)


def _stored_member(raw: bytes, info: zipfile.ZipInfo) -> io.BytesIO | None:
    """The data of a stored (uncompressed) member of the archive whose bytes are ``raw``, as ``zipfile`` would
    read it (the local header's signature and name checked, all its bytes there, their CRC-32 the directory's),
    sliced out without ``zipfile``'s reader objects; None when any of that does not hold (``zipfile`` then reads
    the member, with its own errors)."""
    import struct
    import zlib

    off = info.header_offset
    local = raw[off : off + 30]
    if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size or len(local) != 30:
        return None
    if local[:4] != b"PK\x03\x04" or struct.unpack("<H", local[6:8])[0] != info.flag_bits:
        return None
    n_name, n_extra = struct.unpack("<HH", local[26:30])
    name = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
    start = off + 30 + n_name + n_extra
    data = raw[start : start + info.file_size]
    if raw[off + 30 : off + 30 + n_name] != name or len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        return None
    return io.BytesIO(data)


def _read_npz(path: Path, fh: Any, parsed: zipfile.ZipFile | None = None) -> dict[str, np.ndarray] | None:
    """The arrays of an NPZ from one open handle (or the archive ``parsed`` from it already): the archive checked
    (:func:`check_zip_infos`), then every ``.npy`` member's header read once, checked as
    :func:`check_npy_members` does (a known version, a header within the limits, numeric data of exactly the
    declared size), and its data read straight after it.  Reading with ``np.load`` after the checks opened and
    parsed the archive and every header four times over (about 80% of a zoo folder job).  None when a member
    holds Python objects (the caller then refuses or, when allowed, unpickles it through ``np.load``)."""
    from numpy.lib import format as npformat

    from relusym._base.limits import check_shape, current, shorten

    try:
        archive = parsed if parsed is not None else zipfile.ZipFile(_Named(fh, path.name))
    except ZIP_ERRORS as exc:
        msg = f"{path.name} is not a readable zip archive (truncated or corrupted?): {exc}"
        raise InvalidNetworkError(msg) from None
    check_zip_infos(archive.infolist(), path.name, NAME)
    header_cap = min(current().header_bytes, 1 << 20)
    out: dict[str, np.ndarray] = {}
    raw = fh.getvalue() if isinstance(fh, io.BytesIO) else None  # a file read whole: members sliced from it
    with archive as zf:
        infos = zf.infolist()
        if not all(info.filename.endswith(".npy") for info in infos):
            return None  # members numpy reads as raw bytes: np.load's own reading
        for info in infos:
            where = f"{path.name}: array {shorten(info.filename[:-4])}"
            sliced = _stored_member(raw, info) if raw is not None else None
            with sliced if sliced is not None else zf.open(info) as member:
                try:
                    version = npformat.read_magic(member)
                    if version not in ((1, 0), (2, 0)):
                        raise InvalidNetworkError(f"{where} has the unknown .npy version {version}")
                    shape, fortran, dtype = npy_header(member, version, header_cap)
                    header_len = member.tell()
                except InvalidNetworkError:
                    raise
                except (ValueError, EOFError, OSError, SyntaxError, zipfile.BadZipFile, RuntimeError) as exc:
                    msg = shorten(str(exc), 100)
                    raise InvalidNetworkError(f"{where} has an unreadable .npy header: {msg}") from None
                if dtype.hasobject:
                    return None
                count = math.prod(check_shape(shape, where))
                if count * dtype.itemsize != info.file_size - header_len:
                    raise InvalidNetworkError(
                        f"{where} declares shape {shorten(shape)} of {dtype} ({count * dtype.itemsize} bytes) but "
                        f"holds {info.file_size - header_len} bytes (truncated or corrupted)"
                    )
                try:
                    data = member.read(count * dtype.itemsize)
                except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
                    raise InvalidNetworkError(f"{path} is not a readable numpy file ({exc})") from None
            arr = np.frombuffer(data, dtype=dtype, count=count).copy()  # writable, as np.load gives it
            out[info.filename[:-4]] = arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
    return out


def _plain_npz(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of an NPZ of plain ``.npy`` members (:func:`_read_npz`), from the bytes :func:`relusym.io.load`
    read once (the archive perhaps parsed by :func:`sniff` already), else from one handle; None for anything
    else (not a zip, objects, members that are not arrays)."""
    snap = snapshot(path)
    if snap is not None:
        whole = io.BytesIO(snap.data)
        parsed = snap.cache.pop("zip", None)
        return _read_npz(path, whole, parsed) if parsed is not None or zipfile.is_zipfile(whole) else None
    with open(path, "rb") as fh:
        return _read_npz(path, fh) if zipfile.is_zipfile(fh) else None


def _read_arrays(path: Path, allow_unsafe_pickle: bool) -> dict[str, Any]:
    arrays = _plain_npz(path)
    if arrays is not None:
        return arrays
    if zipfile.is_zipfile(path):  # objects, or members that are not arrays: checked, then np.load
        check_zip(path, NAME)
        check_npy_members(path, allow_objects=allow_unsafe_pickle)
    else:
        with open(path, "rb") as fh:
            head = fh.read(len(_NPY_MAGIC))
        if not head.startswith(_NPY_MAGIC) and not head.startswith(b"\x80"):
            # np.load would take it for a pickle: refused as one (an object array), or unpickled and failed
            raise InvalidNetworkError(
                f"{path} is not a numpy file: neither an .npz (zip) archive nor an .npy array (it begins {head!r})"
            )
    try:
        data = np.load(path, allow_pickle=allow_unsafe_pickle)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, pickle.UnpicklingError) as exc:
        raise InvalidNetworkError(f"{path} is not a readable numpy file ({exc})") from None
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise _pickle_refusal(path) from None
        raise InvalidNetworkError(f"{path}: {exc}") from None
    if isinstance(data, np.ndarray):  # .npy
        if data.dtype == object and data.shape == ():
            warnings.warn(f"unpickling {path.name} runs any code it contains", RuntimeWarning, stacklevel=4)
            obj = data[()]
            if not isinstance(obj, Mapping):
                raise UnsupportedModelError(f"{path.name} holds a {type(obj).__name__}, not a dict of arrays")
            return {str(k): v for k, v in obj.items()}
        raise UnsupportedModelError(
            f"{path.name} holds one array of shape {data.shape}; a network needs its weight and bias arrays (save "
            "them with np.savez(path, W1=..., b1=..., W2=..., b2=...))"
        )
    try:
        with data:
            try:
                return {key: data[key] for key in data.files}
            except ValueError as exc:
                if "allow_pickle" in str(exc):
                    raise _pickle_refusal(path) from None
                raise
    except ValueError as exc:
        raise InvalidNetworkError(f"{path}: {exc}") from None


def read(
    path: Path, *, layout: str | None = None, allow_unsafe_pickle: bool = False
) -> tuple[Network | MLP, tuple[str, ...], bool]:
    """The network of a numpy file; ``recorded`` is True for relusym's own V/A/b/c layout (which defines the
    activation), False for weights saved under other names."""
    path = Path(path)
    arrays = _read_arrays(path, allow_unsafe_pickle)
    own = set(_OWN[:3]) <= set(arrays) and set(arrays) <= set(_OWN)
    try:
        net = from_arrays(arrays, source=path.name, layout=layout)
    except InvalidNetworkError as exc:
        msg = str(exc)
        raise InvalidNetworkError(msg if msg.startswith(path.name) else f"{path.name}: {msg}") from None
    return net, (), own


def load(path: Path, *, layout: str | None = None, allow_unsafe_pickle: bool = False) -> Network | MLP:
    return read(path, layout=layout, allow_unsafe_pickle=allow_unsafe_pickle)[0]


_ORIENTED = re.compile(r"(^|[./_])(weight|kernel|bias)$", re.IGNORECASE)


def from_arrays(arrays: Mapping[str, Any], *, source: str = "the arrays", layout: str | None = None) -> Network | MLP:
    """A network from named arrays: V/A/b/c, torch or Keras/Flax names, or any two (or more) 2-D weights with
    their biases (orientation from the shapes, ``layout`` when both fit)."""
    arrays = {str(k): v for k, v in arrays.items()}
    if "V" in arrays and "A" in arrays:
        A = exact_float_array(arrays["A"], f"{source}: A") if hasattr(arrays["A"], "dtype") else arrays["A"]
        m = int(np.shape(A)[1]) if np.ndim(A) == 2 else None
        return Network(arrays["V"], A, arrays.get("b"), arrays.get("c"), m=m)
    if layout not in (None, "out_in", "in_out"):
        raise InvalidNetworkError(f"layout must be 'out_in' (torch) or 'in_out' (Keras, Flax), got {layout!r}")
    weights = sorted((k for k, v in arrays.items() if np.ndim(v) == 2), key=natural_key)
    if layout is None and weights and all(_ORIENTED.search(k) for k in arrays):
        return chain_linear_layers(arrays, source=source, ordered=False).network()
    if len(weights) > 2:
        return shaped(_generic_chain(arrays, source, layout).layers(arrays, source))
    return _network(arrays, _generic_layout(arrays, source, layout), source)


def _generic_layout(arrays: Mapping[str, Any], source: str, layout: str | None) -> _Layout:
    """The two weights and biases of arrays whose names do not say the orientation, found from the shapes."""
    weights = sorted((k for k, v in arrays.items() if np.ndim(v) == 2), key=natural_key)
    vectors = sorted((k for k, v in arrays.items() if np.ndim(v) == 1), key=natural_key)
    others = [k for k, v in arrays.items() if np.ndim(v) not in (1, 2)]
    if len(weights) != 2:
        raise UnsupportedModelError(
            f"{source} holds {len(weights)} 2-D arrays ({', '.join(weights) or 'none'}); a one-hidden-layer network "
            "has exactly two weight matrices"
        )
    if others or len(vectors) > 2:
        extra = others[0] if others else vectors[2]
        raise UnsupportedModelError(
            f"{source}: array '{extra}' with shape {np.shape(arrays[extra])} is neither a weight nor a bias"
        )
    bias_sizes = [int(np.shape(arrays[v])[0]) for v in vectors]
    options = [
        (first, second, orient)
        for first, second in (weights, weights[::-1])
        for orient in (("out_in", "in_out") if layout is None else (layout,))
        if _fits(np.shape(arrays[first]), np.shape(arrays[second]), orient, bias_sizes)
    ]
    w1, w2 = weights
    s1, s2 = tuple(np.shape(arrays[w1])), tuple(np.shape(arrays[w2]))
    if not options:
        raise InvalidNetworkError(
            f"{source}: '{w1}' {s1} and '{w2}' {s2} (biases of sizes {bias_sizes}) do not chain into m → n → k in "
            "either orientation (out×in as torch, in×out as Keras and Flax)"
        )
    if len(options) > 1:
        options = [o for o in options if o[0] == w1] or options  # both orders chain: the names' order decides
        if len(options) > 1:
            raise InvalidNetworkError(
                f"{source}: '{w1}' {s1} and '{w2}' {s2} fit both the out×in (torch) and the in×out (Keras, Flax, "
                "scikit-learn) orientation; say which with layout='out_in' or layout='in_out'"
            )
    first, second, orient = options[0]
    n = np.shape(arrays[first])[0 if orient == "out_in" else 1]
    k = np.shape(arrays[second])[0 if orient == "out_in" else 1]
    bkey = ckey = None
    if len(vectors) == 2:
        sizes_ok = np.shape(arrays[vectors[0]]) == (n,) and np.shape(arrays[vectors[1]]) == (k,)
        bkey, ckey = (vectors[0], vectors[1]) if sizes_ok else (vectors[1], vectors[0])
    elif len(vectors) == 1:
        if np.shape(arrays[vectors[0]]) == (n,) and (n != k or first == weights[0]):
            bkey = vectors[0]
        else:
            ckey = vectors[0]
    return _Layout(first, second, orient == "in_out", bkey, ckey)


@dataclass(frozen=True)
class _Chain:
    """The weights (in order, and whether stored in×out) and their biases (or None) of a generically named
    deep file."""

    weights: tuple[str, ...]
    in_out: bool
    biases: tuple[str | None, ...]

    def layers(self, arrays: Mapping[str, Any], source: str) -> list[tuple[np.ndarray, np.ndarray | None]]:
        out: list[tuple[np.ndarray, np.ndarray | None]] = []
        for w, b in zip(self.weights, self.biases, strict=True):
            W = exact_float_array(arrays[w], f"{source}: '{w}'")
            if self.in_out:
                W = W.T
            B = exact_float_array(arrays[b], f"{source}: '{b}'") if b else None
            out.append((W, B))
        return out


def _number(name: str) -> str:
    """The digits of a name (``W3`` → ``3``, ``weights_3`` → ``3``), which pair a weight with its bias."""
    return "".join(re.findall(r"\d+", name))


def _generic_chain(arrays: Mapping[str, Any], source: str, layout: str | None) -> _Chain:
    """Three or more weights whose names do not say the orientation: they chain in the natural order of their
    names, in one orientation (``layout`` when both fit); each bias is paired with the weight whose name carries
    the same number, or, with as many biases as weights, by the same natural order."""
    weights = sorted((k for k, v in arrays.items() if np.ndim(v) == 2), key=natural_key)
    vectors = sorted((k for k, v in arrays.items() if np.ndim(v) == 1), key=natural_key)
    others = [k for k, v in arrays.items() if np.ndim(v) not in (1, 2)]
    if others:
        raise UnsupportedModelError(
            f"{source}: array '{others[0]}' with shape {np.shape(arrays[others[0]])} is neither a weight nor a bias"
        )
    shapes = {k: tuple(np.shape(arrays[k])) for k in weights}

    def fits(orient: str) -> tuple[str | None, ...] | None:
        dims = [(s[0], s[1]) if orient == "out_in" else (s[1], s[0]) for s in (shapes[w] for w in weights)]
        if any(b[1] != a[0] for a, b in zip(dims, dims[1:], strict=False)):
            return None
        biases: list[str | None] = [None] * len(weights)
        if len(vectors) == len(weights) and all(
            np.shape(arrays[v]) == (d[0],) for v, d in zip(vectors, dims, strict=True)
        ):
            return tuple(vectors)
        numbers = [_number(w) for w in weights]
        for v in vectors:
            owners = [i for i, num in enumerate(numbers) if num and num == _number(v) and biases[i] is None]
            if len(owners) != 1 or np.shape(arrays[v]) != (dims[owners[0]][0],):
                return None
            biases[owners[0]] = v
        return tuple(biases)

    options = [(o, b) for o in (("out_in", "in_out") if layout is None else (layout,)) if (b := fits(o)) is not None]
    listed = ", ".join(f"'{w}' {shapes[w]}" for w in weights)
    if not options:
        raise InvalidNetworkError(
            f"{source}: the weights {listed} with biases {', '.join(vectors) or 'none'} do not chain into "
            "m → n_1 → … → k in the order of their names in either orientation (out×in as torch, in×out as Keras "
            "and Flax)"
        )
    if len(options) > 1:
        raise InvalidNetworkError(
            f"{source}: the weights {listed} fit both the out×in (torch) and the in×out (Keras, Flax, scikit-learn) "
            "orientation; say which with layout='out_in' or layout='in_out'"
        )
    orient, biases = options[0]
    return _Chain(tuple(weights), orient == "in_out", biases)


@dataclass(frozen=True)
class _Layout:
    """Which arrays of a generically named file are the two weights (and whether stored in×out) and biases."""

    first: str
    second: str
    in_out: bool
    bias: str | None
    out_bias: str | None


def _network(arrays: Mapping[str, Any], lay: _Layout, source: str) -> Network:
    W1 = exact_float_array(arrays[lay.first], f"{source}: '{lay.first}'")
    W2 = exact_float_array(arrays[lay.second], f"{source}: '{lay.second}'")
    if lay.in_out:
        W1, W2 = W1.T, W2.T
    b = exact_float_array(arrays[lay.bias], f"{source}: '{lay.bias}'") if lay.bias else np.zeros(W1.shape[0])
    c = exact_float_array(arrays[lay.out_bias], f"{source}: '{lay.out_bias}'") if lay.out_bias else None
    return Network(W2, W1, b, c, m=W1.shape[1])


def _fits(s1: tuple[int, ...], s2: tuple[int, ...], orient: str, bias_sizes: list[int]) -> bool:
    """Whether weights of shapes s1 (first layer) and s2 (second) chain in ``orient`` with these biases."""
    if orient == "out_in":  # first n×m, second k×n
        n, k, chain = s1[0], s2[0], s2[1] == s1[0]
    else:  # first m×n, second n×k
        n, k, chain = s1[1], s2[1], s1[1] == s2[0]
    if not chain:
        return False
    if len(bias_sizes) == 2:
        return sorted(bias_sizes) == sorted([n, k])
    return len(bias_sizes) == 0 or bias_sizes[0] in (n, k)


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """``np.savez`` of V, A, b, c (relusym's layout; ``0.weight, 0.bias, 2.weight, …`` for a deep network), or of
    ``like``'s names, orientation and dtypes."""
    policy = policy if policy is not None else WritePolicy()
    if policy.dtype == "bfloat16":
        raise UnsupportedModelError(
            "NPZ files cannot hold bfloat16 (numpy has no such type); write float32 (which holds every bfloat16 "
            "value exactly) or safetensors"
        )
    dtypes: dict[str, str | None] = dict.fromkeys(_OWN)
    if like is not None:
        arrays = _read_arrays(Path(like), False)
        if not ({"V", "A"} <= set(arrays)):
            return _save_like(net, path, arrays, policy)
        if isinstance(net, MLP):
            check_depth(len(net.weights), 2, Path(like).name)
        dtypes = {k: arrays[k].dtype.name if k in arrays else None for k in _OWN}
    out: dict[str, np.ndarray] = {}
    if isinstance(net, MLP):
        out, _ = standard_arrays(net, policy)
    else:
        for key, x in zip(_OWN, (net.V, net.A, net.b, net.c), strict=True):
            out[key] = policy.fit(x, policy.target(dtypes[key], x), key)
    with open(path, "wb") as fh:
        np.savez(fh, **out)  # type: ignore[arg-type]
    return None


def _save_like(net: Network | MLP, path: Path, like: dict[str, Any], policy: WritePolicy) -> None:
    """Write under the like file's names, orientation and dtypes."""
    weights = [k for k, v in like.items() if np.ndim(v) == 2]
    out: dict[str, np.ndarray]
    if all(_ORIENTED.search(k) for k in like):
        out, _ = layout_arrays(net, chain_linear_layers(like, source="like", ordered=False), policy)
    elif len(weights) != 2 or isinstance(net, MLP):
        ours = affine_layers(net)
        check_depth(len(ours), len(weights), "the like file")
        chain = _generic_chain(like, "like", None)
        out = {}
        for wkey, bkey, (W, B, wname, bname) in zip(chain.weights, chain.biases, ours, strict=True):
            arr = policy.fit(W, policy.target(like[wkey].dtype.name, W), wname)
            out[wkey] = arr.T.copy() if chain.in_out else arr
            key = bkey or f"{wkey}_bias"
            out[key] = policy.fit(B, policy.target(like[key].dtype.name if key in like else None, B), bname)
    else:
        lay = _generic_layout(like, "like", None)
        A = policy.fit(net.A, policy.target(like[lay.first].dtype.name, net.A), "A")
        V = policy.fit(net.V, policy.target(like[lay.second].dtype.name, net.V), "V")
        out = {lay.first: A.T.copy(), lay.second: V.T.copy()} if lay.in_out else {lay.first: A, lay.second: V}
        bkey = lay.bias or f"{lay.first}_bias"
        ckey = lay.out_bias or f"{lay.second}_bias"
        out[bkey] = policy.fit(net.b, policy.target(like[bkey].dtype.name if bkey in like else None, net.b), "b")
        out[ckey] = policy.fit(net.c, policy.target(like[ckey].dtype.name if ckey in like else None, net.c), "c")
    with open(path, "wb") as fh:
        np.savez(fh, **out)  # type: ignore[arg-type]
