"""The normal form of a big network, for programs: streamed JSON, and exact compact files (npz, parquet).

``relusym canon NET --json`` writes one JSON object with ``"schema": "relusym.canon/2"``:

* always: ``m``, ``n``, ``k`` (the network's shape), ``N`` (kink classes), ``digest`` (see
  :meth:`relusym.NormalForm.digest`), ``full`` (whether ``kinks``, ``M`` and ``e`` are included) and
  ``shapes`` (``kinks``: [N, m+1], ``kink_values``: [N, k], ``M``: [k, m], ``e``: [k]);
* with ``--full``, or by default when the normal form has at most :data:`FULL_BY_DEFAULT` rational entries:
  ``kinks`` (a list of ``{"hyperplane": [m+1 rationals], "kink": [k rationals]}`` sorted by the hyperplane),
  ``M`` (k rows of m) and ``e`` (k), every rational the string ``"p/q"`` or ``"p"``.

The full object is streamed block by block to the output (never built as one string): the canonical JSON text of
(m, k, K, M, e) (:meth:`relusym.NormalForm.json_bytes`), followed by the small keys.  The digest is not a hash of
this text: it hashes the integer encoding of scheme ``relusym.nf/2`` (see :mod:`relusym._core.digest`).

``-o FILE`` writes the full normal form atomically, chosen by the suffix:

* ``.json``: the object above with ``full`` true;
* ``.npz``: numpy arrays in an exact integer encoding.  ``hyperplane_num`` (N × (m+1), int64) and
  ``hyperplane_den`` (N, int64 > 0): û_j = hyperplane_num[j] / hyperplane_den[j], each row in lowest terms.
  ``kink_num`` (N × k) with ``kink_den_log2``: κ = kink_num / 2^kink_den_log2, one power of two shared by the
  whole array (float networks have dyadic kinks); likewise ``M_num``/``M_den_log2`` and ``e_num``/``e_den_log2``.
  A part that is not dyadic or does not fit in int64 is stored instead as a string array of ``"p/q"`` under its
  plain name (``hyperplane``, ``kink``, ``M``, ``e``).  Also ``schema``, ``digest``, ``m``, ``k``, ``N``.
* ``.parquet`` (pyarrow): one row per kink class, columns ``hyperplane_num`` (list of int64),
  ``hyperplane_den`` (int64) and ``kink_num`` (list of int64), or string lists ``hyperplane`` / ``kink`` when
  the integer encoding does not apply; the file's key-value metadata holds ``schema``, ``digest``, ``m``, ``k``,
  ``kink_den_log2`` and ``M`` and ``e`` as the JSON strings of their rational spellings.

:func:`read_export` reads a ``.npz`` or ``.parquet`` file back into exact rationals.
"""

from __future__ import annotations

import io
import json
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

import numpy as np

from relusym._base.fileio import atomic_write
from relusym._core.normal_form import NormalForm
from relusym._exact.decimal import bit_length
from relusym._exact.mantissas import float_parts
from relusym._exact.numbers import fraction_str, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["SCHEMA", "FULL_BY_DEFAULT", "write_canon_json", "export_normal_form", "read_export", "summary"]

SCHEMA = "relusym.canon/2"  # /2: the digest is scheme relusym.nf/2 (was the SHA-256 of the JSON text)
FULL_BY_DEFAULT = 100_000  # rational entries up to which --json includes kinks, M and e without --full


def _entries(nf: NormalForm) -> int:
    return nf.N * (nf.m + 1 + nf.k) + nf.k * nf.m + nf.k


def summary(nf: NormalForm, n: int) -> dict[str, Any]:
    """The small part of the canon object: schema, shape, counts, shapes and the digest."""
    return {
        "schema": SCHEMA,
        "m": nf.m,
        "n": n,
        "k": nf.k,
        "N": nf.N,
        "shapes": {"kinks": [nf.N, nf.m + 1], "kink_values": [nf.N, nf.k], "M": [nf.k, nf.m], "e": [nf.k]},
        "digest": nf.digest(),
    }


def write_canon_json(
    nf: NormalForm, out: IO[bytes], n: int, *, full: bool | None = None, extra: dict[str, Any] | None = None
) -> str:
    """Stream the ``relusym.canon/2`` object to ``out`` (see the module docstring); returns the digest.

    ``full=None`` includes kinks, M and e when the normal form is small (``FULL_BY_DEFAULT``); ``extra`` keys
    (e.g. the provenance of the input) are added to the object."""
    more = dict(extra or {})
    if full is None:
        full = _entries(nf) <= FULL_BY_DEFAULT
    if not full:
        d = summary(nf, n)
        d["full"] = False
        d.update(more)
        out.write(json.dumps(d).encode() + b"\n")
        return str(d["digest"])
    if type(nf)._payload is not NormalForm._payload:  # a subclass hashing more than (m, k, K, M, e)
        d = {**summary(nf, n), **{k: v for k, v in nf.to_dict().items() if k != "schema"}, "full": True, **more}
        out.write(json.dumps(d).encode() + b"\n")
        return str(d["digest"])
    digest = nf.digest()
    last = b""
    for chunk in nf.json_bytes():
        if last:
            out.write(last)
        last = chunk
    assert last.endswith(b"}")
    out.write(last[:-1])
    tail = {"schema": SCHEMA, "n": n, "N": nf.N, "full": True, "digest": digest}
    tail["shapes"] = {"kinks": [nf.N, nf.m + 1], "kink_values": [nf.N, nf.k], "M": [nf.k, nf.m], "e": [nf.k]}
    tail.update(more)
    out.write(b"," + json.dumps(tail)[1:].encode() + b"\n")
    return digest


# ----------------------------------------------------------------------------------------------------------
# the exact integer encoding


def _hyperplane_ints(nf: NormalForm) -> tuple[np.ndarray, np.ndarray] | None:
    """(num, den) with û_j = num[j] / den[j] in lowest terms, int64; None when it does not fit (or not float)."""
    h = nf.classes
    js = nf.kink_order
    N, m = js.shape[0], nf.m
    if h.A.dtype == object or h.b.dtype == object:
        return None
    if N == 0:
        return np.zeros((0, m + 1), dtype=np.int64), np.zeros(0, dtype=np.int64)
    reps = h.rep[js]
    X = np.concatenate([h.A[reps].astype(np.float64), h.b[reps].astype(np.float64)[:, None]], axis=1)
    mx, ex = float_parts(X)
    ml, el = float_parts(h.lam[reps])
    big = np.iinfo(np.int64).max
    emin = np.where(mx != 0, ex, big).min(axis=1)
    s = np.minimum(emin, el)[:, None]
    up = np.where(mx != 0, ex - s, 0)
    dup = el[:, None] - s
    if int((bit_length(mx) + up).max()) > 62 or int((bit_length(ml)[:, None] + dup).max()) > 62:
        return None
    num = (mx << up) * np.sign(ml)[:, None]
    den = np.abs(ml)[:, None] << dup
    g = np.gcd(np.gcd.reduce(np.abs(num), axis=1)[:, None], den)
    return num // g, (den // g)[:, 0]


def _dyadic_ints(values: list[Fraction]) -> tuple[np.ndarray, int] | None:
    """(num, log2 den) with values = num / 2^log2den for one shared power of two, int64; None otherwise."""
    log2 = 0
    for q in values:
        d = q.denominator
        if d & (d - 1):
            return None
        log2 = max(log2, d.bit_length() - 1)
    nums = [q.numerator << (log2 - (q.denominator.bit_length() - 1)) for q in values]
    if any(abs(x) >= 1 << 62 for x in nums):
        return None
    return np.array(nums, dtype=np.int64), log2


def _kink_ints(nf: NormalForm) -> tuple[np.ndarray, int] | None:
    h = nf.classes
    js = nf.kink_order
    if h.kappa.dtype == object:
        flat = [to_fraction(x) for x in h.kappa[js].ravel().tolist()]
        out = _dyadic_ints(flat)
        return None if out is None else (out[0].reshape(len(js), nf.k), out[1])
    kap = h.kappa[js]
    mk, ek = float_parts(kap)
    nz = mk != 0
    if not nz.any():
        return np.zeros(kap.shape, dtype=np.int64), 0
    s = int(ek[nz].min())
    up = np.where(nz, ek - s, 0)
    if int((bit_length(mk) + up).max()) > 62:
        return None
    num = mk << up
    if s > 0:
        if int((bit_length(mk) + up).max()) + s > 62:
            return None
        return num << s, 0
    return num, -s


def _strings(rows: Any) -> np.ndarray:
    return np.array([[fraction_str(x) for x in row] for row in rows], dtype=str)


def _npz_arrays(nf: NormalForm) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {
        "schema": np.array(SCHEMA),
        "digest": np.array(nf.digest()),
        "m": np.array(nf.m),
        "k": np.array(nf.k),
        "N": np.array(nf.N),
    }
    hp = _hyperplane_ints(nf)
    if hp is not None:
        arrays["hyperplane_num"], arrays["hyperplane_den"] = hp
    else:
        arrays["hyperplane"] = _strings(u for u, _ in nf.K).reshape(nf.N, nf.m + 1)
    ki = _kink_ints(nf)
    if ki is not None:
        arrays["kink_num"], arrays["kink_den_log2"] = ki[0], np.array(ki[1])
    else:
        arrays["kink"] = _strings(kap for _, kap in nf.K).reshape(nf.N, nf.k)
    for name, values, shape in (
        ("M", [x for row in nf.M for x in row], (nf.k, nf.m)),
        ("e", list(nf.e), (nf.k,)),
    ):
        dy = _dyadic_ints(values)
        if dy is not None:
            arrays[f"{name}_num"], arrays[f"{name}_den_log2"] = dy[0].reshape(shape), np.array(dy[1])
        else:
            arrays[name] = np.array([fraction_str(x) for x in values], dtype=str).reshape(shape)
    return arrays


def export_normal_form(nf: NormalForm, path: str, n: int) -> None:
    """Write the full normal form to ``path`` (``.json``, ``.npz`` or ``.parquet``) atomically."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        atomic_write(path, lambda fh: write_canon_json(nf, fh, n, full=True))
    elif suffix == ".npz":
        arrays = _npz_arrays(nf)
        atomic_write(path, lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]
    elif suffix == ".parquet":
        _write_parquet(nf, path)
    else:
        raise InvalidNetworkError(f"-o {path}: unknown output format {suffix!r}; use .json, .npz or .parquet")


def _write_parquet(nf: NormalForm, path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, Any] = {}
    meta = {"schema": SCHEMA, "digest": nf.digest(), "m": str(nf.m), "k": str(nf.k)}
    hp = _hyperplane_ints(nf)
    if hp is not None:
        cols["hyperplane_num"] = pa.array(list(hp[0]), type=pa.list_(pa.int64()))
        cols["hyperplane_den"] = pa.array(hp[1], type=pa.int64())
    else:
        cols["hyperplane"] = pa.array([[fraction_str(x) for x in u] for u, _ in nf.K], type=pa.list_(pa.string()))
    ki = _kink_ints(nf)
    if ki is not None:
        cols["kink_num"] = pa.array(list(ki[0]), type=pa.list_(pa.int64()))
        meta["kink_den_log2"] = str(ki[1])
    else:
        cols["kink"] = pa.array([[fraction_str(x) for x in kap] for _, kap in nf.K], type=pa.list_(pa.string()))
    meta["M"] = json.dumps(nf.M_strings())
    meta["e"] = json.dumps(nf.e_strings())
    table = pa.table(cols).replace_schema_metadata({k: v.encode() for k, v in meta.items()})

    def write(fh: IO[bytes]) -> None:
        buf = io.BytesIO()
        pq.write_table(table, buf)
        fh.write(buf.getvalue())

    atomic_write(path, write)


def read_export(path: str) -> dict[str, Any]:
    """Read a ``.npz`` or ``.parquet`` normal-form file back: ``m``, ``k``, ``digest``, and ``kinks`` (a list of
    (û, κ) tuples of Fractions), ``M`` and ``e`` as exact rationals."""
    suffix = Path(path).suffix.lower()
    if suffix == ".npz":
        z = np.load(path)
        m, k = int(z["m"]), int(z["k"])
        if "hyperplane_num" in z:
            us = [
                tuple(Fraction(int(x), int(d)) for x in row)
                for row, d in zip(z["hyperplane_num"].tolist(), z["hyperplane_den"].tolist(), strict=True)
            ]
        else:
            us = [tuple(to_fraction(x) for x in row) for row in z["hyperplane"].tolist()]
        if "kink_num" in z:
            den = 1 << int(z["kink_den_log2"])
            ks = [tuple(Fraction(int(x), den) for x in row) for row in z["kink_num"].tolist()]
        else:
            ks = [tuple(to_fraction(x) for x in row) for row in z["kink"].tolist()]

        def part(name: str) -> Any:
            if f"{name}_num" in z:
                den = 1 << int(z[f"{name}_den_log2"])
                return np.vectorize(lambda x: Fraction(int(x), den), otypes=[object])(z[f"{name}_num"]).tolist()
            return np.vectorize(to_fraction, otypes=[object])(z[name]).tolist()

        return {"m": m, "k": k, "digest": str(z["digest"]), "kinks": list(zip(us, ks, strict=True)),
                "M": [tuple(r) for r in part("M")], "e": tuple(part("e"))}  # fmt: skip
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path)
        meta = {k.decode(): v.decode() for k, v in (t.schema.metadata or {}).items()}
        d = t.to_pydict()
        if "hyperplane_num" in d:
            us = [
                tuple(Fraction(x, den) for x in row)
                for row, den in zip(d["hyperplane_num"], d["hyperplane_den"], strict=True)
            ]
        else:
            us = [tuple(to_fraction(x) for x in row) for row in d["hyperplane"]]
        if "kink_num" in d:
            kd = 1 << int(meta["kink_den_log2"])
            ks = [tuple(Fraction(x, kd) for x in row) for row in d["kink_num"]]
        else:
            ks = [tuple(to_fraction(x) for x in row) for row in d["kink"]]
        return {
            "m": int(meta["m"]),
            "k": int(meta["k"]),
            "digest": meta["digest"],
            "kinks": list(zip(us, ks, strict=True)),
            "M": [tuple(to_fraction(x) for x in row) for row in json.loads(meta["M"])],
            "e": tuple(to_fraction(x) for x in json.loads(meta["e"])),
        }
    raise InvalidNetworkError(f"{path}: not a .npz or .parquet normal-form file")
