"""Reading and writing networks: one module per format, each with the same small protocol.

The protocol is :mod:`relusym.io._protocol`, as ``typing.Protocol`` classes that mypy checks every format module
against.  A format module defines ``NAME``, ``SUFFIXES``, ``RECORDS_ACTIVATION`` (whether its files say which
activation the network applies; a state_dict, safetensors, npz or msgpack file holds weights only),
``sniff(path, head) -> bool``, ``load(path) -> Network | MLP``, ``save(net, path, like=None, *, policy)`` and,
for in-memory models, ``accepts(obj) -> bool`` and ``from_object(obj) -> Network | MLP``.  Every reader gives a
network with one hidden layer as a :class:`~relusym.Network` and one with two or more (a chain of affine layers
with a ReLU between each two) as a :class:`relusym._deep.mlp.MLP`; every writer takes both.  Optionally
``read(path, **kw) -> (Network, notes, recorded)`` when reading has something to say (a classifier read as its
logits, ...; ``recorded`` overrides ``RECORDS_ACTIVATION`` for this file, or is None),
and ``read_back(path)`` for reading its own output when ``load`` would refuse it (pickles).  Heavy packages are
imported inside those functions only.

Writing follows one rounding policy (:class:`relusym.io._layers.WritePolicy`): a file receives exactly the
network given, checked against the file's own float type (float16 and bfloat16 included), or nothing is written
and the error names the first entry that does not fit.  ``allow_rounding=True`` is the only way to round, and
then :func:`save` reports how far the written network is (``relusym.distance``); ``dtype="float64"`` widens.
Every write goes through :mod:`relusym._base.fileio` (a temporary sibling, then a rename) and is read back and
compared with what was meant to be written before it replaces the target.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import stat
import struct
import sys
import warnings
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from relusym._base.document import schema_of
from relusym._base.fileio import atomic_path, check_output, temporary_file
from relusym._base.limits import Limits, file_limit, limits, shorten
from relusym._base.limits import current as current_limits
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._opened import WHOLE, preloaded
from relusym.io._protocol import Format, NotedReader, ObjectActivation, ObjectReader, ReadBack, Writer

__all__ = [
    "load",
    "load_with_info",
    "save",
    "format_of",
    "FORMATS",
    "LoadInfo",
    "SaveInfo",
    "ASSUMED_ACTIVATION",
    "AssumedActivationWarning",
    "input_box",
    "exact_reduction",
    "Limits",
    "limits",
    "is_stdin",
    "STDIN",
]

ASSUMED_ACTIVATION = (
    "no activation is recorded (weights only), so the network is read as Linear → ReLU → … → Linear; relusym cannot "
    "check that the model that produced these weights applies a ReLU (a tanh or residual network would be misread)"
)


class AssumedActivationWarning(UserWarning):
    """:func:`load` read a file (or object) that records no activation, so it assumed ReLU between the layers.

    Raised once per :func:`load` of such a source; :func:`load_with_info` does not warn, it returns the same
    fact as ``LoadInfo.activation == "assumed"`` (and the note in ``LoadInfo.notes``).  Silence it with
    ``warnings.filterwarnings("ignore", category=relusym.io.AssumedActivationWarning)``."""


@dataclass(frozen=True)
class LoadInfo:
    """Where a network came from and what reading it assumed.

    ``activation`` is ``"recorded"`` when the source says that the hidden layer applies a ReLU (an ONNX graph, a
    Keras config, a traced module, relusym's own JSON) and ``"assumed"`` when it holds weights only (a state_dict,
    safetensors, npz, msgpack): the network is then read as Linear → ReLU → Linear, and ``notes`` says so.
    ``notes`` are sentences a person should see (also the warnings reading raised)."""

    source: str
    format: str
    activation: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "format": self.format, "activation": self.activation, "notes": list(self.notes)}


@dataclass(frozen=True)
class SaveInfo:
    """What :func:`save` wrote: the file, its format and float type, whether the file's network is exactly the
    one given (``exact``), which arrays were rounded (only with ``allow_rounding=True``) and then ``distance``
    (``relusym.distance`` between the given and the written network, a relative measure that reads 0 below float
    resolution) and ``max_change`` (the largest absolute change of an entry), and ``notes`` (entries of a
    checkpoint that were dropped, ...)."""

    path: str
    format: str
    exact: bool
    rounded: tuple[str, ...] = ()
    distance: float | None = None
    max_change: float | None = None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "exact": self.exact,
            "rounded": list(self.rounded),
            "distance": self.distance,
            "max_change": self.max_change,
            "notes": list(self.notes),
        }


# module names under relusym.io, in the order they are tried
FORMATS: tuple[str, ...] = (
    "_json_format",
    "_npz_format",
    "_safetensors_format",
    "_onnx_format",
    "_torch_format",
    "_flax_format",
    "_keras_format",
    "_sklearn_format",
    "_nnet_format",
)


def _module(name: str) -> Format | None:
    try:
        return cast(Format, importlib.import_module(f"{__name__}.{name}"))
    except ModuleNotFoundError as exc:  # a format module not shipped in this build
        if exc.name and exc.name.endswith(name):
            return None
        raise


_MODULES: list[Format] = []


def _modules() -> list[Format]:
    """The format modules shipped in this build, imported once (a zoo folder asks for them per file)."""
    if not _MODULES:
        _MODULES.extend(mod for mod in (_module(n) for n in FORMATS) if mod is not None)
    return list(_MODULES)


_CAPABLE: dict[tuple[str, type], bool] = {}


def _capable(mod: Any, proto: type) -> bool:
    """``isinstance(mod, proto)`` for a format module and a runtime-checkable protocol, remembered per module:
    the protocol check inspects every member each time (half a millisecond per file of a zoo folder)."""
    key = (getattr(mod, "__name__", ""), proto)
    if not key[0].startswith(f"{__name__}."):
        return isinstance(mod, proto)
    if key not in _CAPABLE:
        _CAPABLE[key] = isinstance(mod, proto)
    return _CAPABLE[key]


def format_of(path: str | os.PathLike[str], *, for_writing: bool = False) -> Format:
    """The format module for a file: by content when it exists (reading), else by suffix."""
    p = Path(path)
    mods = _modules()
    if not for_writing:
        if p.is_dir() and not p.is_symlink():
            return cast(Format, importlib.import_module(f"{__name__}._folder_format"))
        _check_input(p)
        with open(p, "rb") as fh:
            head = fh.read(64)
        return _by_content(p, head, mods)
    return _by_suffix(p, mods, for_writing)


def _by_content(p: Path, head: bytes, mods: list[Format]) -> Format:
    """The format of the file ``p`` that begins with ``head`` (its first 64 bytes): the first module whose sniffer
    recognises it, else by suffix."""
    if not head:
        raise InvalidNetworkError(f"{p} is empty")
    for mod in mods:
        if mod.sniff(p, head):
            return mod
    return _by_suffix(p, mods, False)


def _by_suffix(p: Path, mods: list[Format], for_writing: bool) -> Format:
    suffix = p.suffix.lower()
    for mod in mods:
        if suffix in mod.SUFFIXES:
            return mod
    known = sorted({s for mod in mods for s in mod.SUFFIXES})
    what = "write" if for_writing else "recognise the format of"
    raise UnsupportedModelError(f"cannot {what} {p}: supported files are {', '.join(known)}")


# ----------------------------------------------------------------------------------------------------------
# input checks: regular files only (or standard input), sizes within the limits, every failure one sentence

STDIN = "-"
_STDIN_NAMES = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
_STDIN_LABEL = "<stdin>"
# what a reader raises on malformed data (anything else escaping a reader is a bug, reported as such)
_DATA_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    OverflowError,
    EOFError,
    KeyError,
    IndexError,
    UnicodeError,
    RecursionError,
    MemoryError,
    zipfile.BadZipFile,
    NotImplementedError,  # zipfile: a member claiming a zip version or compression it does not implement
    struct.error,
)


def _check_input(p: Path) -> os.stat_result:
    """A readable regular file (symlinks followed): never a device, FIFO or socket, which could block or never
    end."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InvalidNetworkError(f"{p}: no such file") from None
    except OSError as exc:
        raise InvalidNetworkError(f"cannot read {p}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InvalidNetworkError(f"{p} is a directory, not a network file")
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(st.st_mode)
            else "a character device"
            if stat.S_ISCHR(st.st_mode)
            else "a block device"
            if stat.S_ISBLK(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "not a regular file"
        )
        raise InvalidNetworkError(
            f"{p} is {kind}, not a regular file; relusym reads regular files, or standard input given as -"
        )
    if not os.access(p, os.R_OK):
        raise InvalidNetworkError(f"cannot read {p}: permission denied")
    return st


def is_stdin(source: Any) -> bool:
    """True for ``-`` and for ``/dev/stdin`` when standard input is not a regular file (a pipe)."""
    if not isinstance(source, str | os.PathLike):
        return False
    text = os.fspath(source)
    if text == STDIN:
        return True
    if text in _STDIN_NAMES:
        try:
            return not stat.S_ISREG(os.stat(text).st_mode)
        except OSError:
            return True
    return False


def _spool_stdin(target: Path) -> None:
    """Standard input copied once into a private file (readers need a seekable file), within the limits: the
    format is recognised from the first bytes before more is read, and the format's size limit applies."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise InvalidNetworkError("standard input is not available")
    lim = current_limits()
    cap = lim.stdin_bytes
    with open(target, "wb") as out:
        head = stream.read(64)
        while head and len(head) < 64:  # a pipe may deliver the first bytes in pieces
            more = stream.read(64 - len(head))
            if not more:
                break
            head += more
        if not head:
            raise InvalidNetworkError("standard input is empty")
        out.write(head)
        out.flush()
        mods = [mod for mod in _modules() if _sniffs(mod, target, head)]
        if not mods and not head.startswith(b"PK"):  # a zip (NPZ, torch) is recognised once it is complete
            raise UnsupportedModelError("cannot recognise the format of standard input from its first bytes")
        if mods and all(mod.NAME == mods[0].NAME for mod in mods):
            cap = min(cap, file_limit(mods[0].NAME))
        name = mods[0].NAME if len(mods) == 1 else "stdin"
        total = len(head)
        while True:
            chunk = stream.read(1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise InvalidNetworkError(
                    f"standard input is larger than {cap} bytes, the limit for {name} input "
                    f"(raise it with --limit {name}_bytes=N)"
                )
            out.write(chunk)


def _read_path(mod: Format, p: Path, kwargs: dict[str, Any]) -> tuple[Network | MLP, LoadInfo]:
    noted = _capable(mod, NotedReader)
    fn: Callable[..., Any] = cast(NotedReader, mod).read if noted else mod.load
    if "allow_unsafe_pickle" in kwargs and "allow_unsafe_pickle" not in inspect.signature(fn).parameters:
        kwargs = {k: v for k, v in kwargs.items() if k != "allow_unsafe_pickle"}  # an opt-in, not an order
    recorded: bool | None = None
    notes: tuple[str, ...] = ()
    if noted:
        net, notes, recorded = fn(p, **kwargs)
    else:
        net = fn(p, **kwargs)
    if recorded is None:
        recorded = mod.RECORDS_ACTIVATION
    all_notes = tuple(notes) if recorded else (ASSUMED_ACTIVATION, *notes)
    return net, LoadInfo(str(p), mod.NAME, "recorded" if recorded else "assumed", all_notes)


def _sniffs(mod: Format, path: Path, head: bytes) -> bool:
    try:
        return bool(mod.sniff(path, head))
    except Exception:  # a sniffer that trips over a partial file does not recognise it
        return False


def _relabel(exc: Exception, real: Path) -> Exception:
    """The same error with the private spool file's path and name replaced by ``<stdin>``."""
    msg = str(exc).replace(str(real), _STDIN_LABEL).replace(real.name, _STDIN_LABEL)
    return type(exc)(msg)


def _read_checked(p: Path, kwargs: dict[str, Any]) -> tuple[Network | MLP, LoadInfo]:
    if p.is_dir() and not p.is_symlink():
        return _read_sized(format_of(p), p, 0, kwargs)
    size = _check_input(p).st_size
    mods = _modules()
    lim = current_limits()
    whole = size <= min([WHOLE] + [file_limit(mod.NAME, lim) for mod in mods])  # read once, within every limit
    with open(p, "rb") as fh:
        data = fh.read(size + 1 if whole else 64)
    with preloaded(p, data if whole and len(data) == size else None):  # a file that changed: read as before
        return _read_sized(_by_content(p, data[:64], mods), p, size, kwargs)


def _read_sized(mod: Format, p: Path, size: int, kwargs: dict[str, Any]) -> tuple[Network | MLP, LoadInfo]:
    """Read ``p`` (``size`` bytes) as format ``mod``, within its size limit; every failure one sentence."""
    cap = file_limit(mod.NAME)
    if size > cap:
        raise InvalidNetworkError(
            f"{p} is {size} bytes, more than the limit {mod.NAME}_bytes = {cap} (raise it with "
            f"--limit {mod.NAME}_bytes=N)"
        )
    try:
        return _read_path(mod, p, kwargs)
    except (InvalidNetworkError, UnsupportedModelError):
        raise
    except FileNotFoundError as exc:
        raise InvalidNetworkError(f"{p}: cannot read {exc.filename or 'a file it refers to'}: no such file") from None
    except OSError as exc:
        raise InvalidNetworkError(f"cannot read {p}: {exc.strerror or shorten(str(exc), 100)}") from None
    except _DATA_ERRORS as exc:
        raise InvalidNetworkError(
            f"{p} is not a readable {mod.NAME} file (truncated or corrupted?): {type(exc).__name__}: "
            f"{shorten(str(exc).strip().splitlines()[0] if str(exc).strip() else '', 100)[1:-1]}"
        ) from None


def load(source: Any, **kwargs: Any) -> Network | MLP:
    """A network from a path (any supported format, found from the content; a Hugging Face-style model folder)
    or an in-memory object: a ``Network`` or ``MLP``, a ``relusym.network/1`` or ``relusym.mlp/1`` dict, a dict
    of numpy arrays, a torch module or state_dict, a fitted scikit-learn MLP, a Flax parameter dict or nnx module,
    a Keras model or an ONNX ModelProto.  One hidden layer gives a ``Network``, two or more an ``MLP``.
    A source that records no activation (a state_dict, safetensors, npz or msgpack file, a dict of arrays) is
    read as Linear → ReLU → … → Linear, and an :class:`AssumedActivationWarning` says so; :func:`load_with_info`
    returns that fact (and what else reading assumed) in a :class:`LoadInfo` instead of warning."""
    net, info = load_with_info(source, **kwargs)
    if info.activation == "assumed":
        warnings.warn(AssumedActivationWarning(f"{info.source}: {ASSUMED_ACTIVATION}"), stacklevel=2)
    return net


def _object_info(source: Any, mod: Format | None) -> LoadInfo:
    name = f"{type(source).__module__}.{type(source).__name__}"
    if mod is None:
        return LoadInfo(name, "arrays", "assumed", (ASSUMED_ACTIVATION,))
    if isinstance(mod, ObjectActivation):
        recorded = mod.object_records_activation(source)
    else:
        recorded = mod.RECORDS_ACTIVATION
    notes = () if recorded else (ASSUMED_ACTIVATION,)
    return LoadInfo(name, mod.NAME, "recorded" if recorded else "assumed", notes)


def load_with_info(source: Any, **kwargs: Any) -> tuple[Network | MLP, LoadInfo]:
    """:func:`load`, and a :class:`LoadInfo` saying where the network came from and whether the source records
    its activation (else it was read as Linear → ReLU → Linear, and the info's notes say so).  It does not raise
    the :class:`AssumedActivationWarning` of :func:`load`: the info carries it (``info.activation``)."""
    if isinstance(source, Network):
        return source, LoadInfo("relusym.Network", "network", "recorded")
    if isinstance(source, MLP):
        return source, LoadInfo("relusym.MLP", "network", "recorded")
    if isinstance(source, str | os.PathLike):
        if is_stdin(source):
            with temporary_file("relusym-stdin-") as spooled:
                _spool_stdin(spooled)
                try:
                    net, info = _read_checked(spooled, kwargs)
                except (InvalidNetworkError, UnsupportedModelError) as exc:
                    raise _relabel(exc, spooled) from None
                return net, dataclasses.replace(info, source=STDIN)
        return _read_checked(Path(source), kwargs)
    if isinstance(source, Mapping) and "V" in source and "A" in source:
        return Network.from_dict(dict(source)), LoadInfo("dict", "network", "recorded")
    if isinstance(source, Mapping) and (
        schema_of(dict(source)) == "relusym.mlp/1" or ("V" not in source and isinstance(source.get("weights"), list))
    ):
        from relusym.io._json_format import from_mlp_dict

        return from_mlp_dict(dict(source), "the dict"), LoadInfo("dict", "network", "recorded")
    for mod in _modules():
        if isinstance(mod, ObjectReader) and mod.accepts(source):
            return mod.from_object(source), _object_info(source, mod)
    if isinstance(source, Mapping) and source and all(hasattr(v, "shape") for v in source.values()):
        from relusym.io._npz_format import from_arrays

        return from_arrays(source, source="the dict of arrays", **kwargs), _object_info(source, None)
    raise UnsupportedModelError(
        f"cannot read a network from a {type(source).__module__}.{type(source).__name__} object; supported: "
        "file paths, relusym.Network and MLP, relusym.network/1 and relusym.mlp/1 dicts, dicts of numpy arrays, "
        "torch modules and state_dicts, fitted scikit-learn MLPs, Flax parameter dicts and nnx modules, Keras "
        "models and ONNX models"
    )


def save(
    net: Network | MLP,
    path: str | os.PathLike[str],
    *,
    like: str | os.PathLike[str] | None = None,
    allow_rounding: bool = False,
    dtype: str | None = None,
    allow_unsafe_pickle: bool = False,
) -> SaveInfo:
    """Write ``net`` (a ``Network``, or an ``MLP`` of any depth) to ``path`` atomically, exactly: the file's
    network is ``net`` itself.

    The format is ``like``'s when given (the original file, whose layout, dtypes and other entries are
    reproduced), else the suffix's.  An entry that the file's float type does not hold exactly is refused (a
    :class:`~relusym.errors.NotRepresentableError` naming it; nothing is written) unless ``allow_rounding=True``,
    in which case the returned :class:`SaveInfo` carries the ``distance`` between ``net`` and the written network.
    ``dtype`` (``"float16"``, ``"bfloat16"``, ``"float32"``, ``"float64"``) replaces the file's float type, e.g.
    ``dtype="float64"`` to keep a float16 file's pruned network exactly.  Before the file replaces ``path`` it is
    read back and compared with the network meant to be written.  For a deep network written with rounding,
    ``distance`` is not computed (``max_change`` is).

    Writing ``like`` a file keeps everything of it that the network does not change: a scikit-learn classifier
    stays a classifier (its classes and output activation), an ONNX model keeps its input signature, the nodes
    before the first layer and its classifier head with every output, an NNet file its header and normalisation,
    a model folder its ``config.json`` (with the new width).  A scikit-learn ``like`` file is unpickled for that
    (which runs its code) only with ``allow_unsafe_pickle=True`` or when this process read that same file with
    it; a model folder ``like`` is written as a folder unless ``path`` has the weights file's suffix.
    """
    from relusym.io._layers import WritePolicy, as_model

    net = as_model(net)
    if isinstance(net, MLP) and net.depth < 1:
        raise InvalidNetworkError(
            "this MLP has no hidden layer (one affine layer); relusym writes ReLU networks with at least one"
        )
    p = Path(path)
    if like is not None and Path(like).is_dir():  # a model folder: its weights file is the layout
        folder_format = importlib.import_module(f"{__name__}._folder_format")
        folder = Path(like)
        inner = folder_format.weights_file(folder)
        if inner is None:
            raise UnsupportedModelError(f"cannot write in the layout of {like}: it has no single weights file")
        if p.suffix.lower() != inner.suffix.lower():  # a folder like the original: weights and config.json
            folder_format.check_target(p, folder)
            old = folder_format.load(folder)
            created = not p.exists()
            p.mkdir(exist_ok=True)
            try:
                info = save(
                    net,
                    p / inner.name,
                    like=inner,
                    allow_rounding=allow_rounding,
                    dtype=dtype,
                    allow_unsafe_pickle=allow_unsafe_pickle,
                )
                notes = folder_format.write_config(p, folder, old, as_model(net))
            except BaseException:
                if created:
                    import shutil

                    shutil.rmtree(p, ignore_errors=True)
                raise
            return dataclasses.replace(info, path=str(p), format="folder", notes=(*info.notes, *notes))
        like = inner
    mod = format_of(like) if like is not None else format_of(p, for_writing=True)
    if not isinstance(mod, Writer):
        raise UnsupportedModelError(f"relusym cannot write {mod.NAME} files")
    check_output(p)
    policy = WritePolicy(allow_rounding=allow_rounding, dtype=dtype, allow_unsafe_pickle=allow_unsafe_pickle)
    distance: float | None = None
    change: float | None = None
    with atomic_path(p) as tmp:
        try:
            mod.save(net, tmp, like=Path(like) if like is not None else None, policy=policy)
        except (InvalidNetworkError, UnsupportedModelError) as exc:  # name the output, not its temporary sibling
            if str(tmp) not in str(exc) and tmp.name not in str(exc):
                raise
            raise type(exc)(str(exc).replace(str(tmp), str(p)).replace(tmp.name, p.name)) from None
        reader = mod.read_back if isinstance(mod, ReadBack) else mod.load
        with warnings.catch_warnings():  # reading back our own file: what it would warn about was said on reading
            warnings.simplefilter("ignore")
            written = reader(tmp)
        if type(written) is not type(net):
            raise InvalidNetworkError(
                f"writing {p.name} as {mod.NAME} would not give back this network when read (it reads as a "
                f"{type(written).__name__}); nothing was written"
            )
        if policy.rounded:
            if isinstance(net, Network) and isinstance(written, Network):
                from relusym._tolerance.approx import distance as _distance

                distance = float(_distance(net, written))
            else:
                policy.notes.append("distance is computed for one-hidden-layer networks only; see max_change")
            change = _max_change(net, written)
        elif not _same_parameters(net, written):
            raise InvalidNetworkError(
                f"writing {p.name} as {mod.NAME} would not give back this network when read; nothing was written"
            )
    return SaveInfo(str(p), mod.NAME, not policy.rounded, tuple(policy.rounded), distance, change, tuple(policy.notes))


def _same_parameters(a: Network | MLP, b: Network | MLP) -> bool:
    if isinstance(a, Network) and isinstance(b, Network):
        return a.same_parameters(b)
    if isinstance(a, MLP) and isinstance(b, MLP):
        return a.same_parameters(b)
    return False


def _max_change(given: Network | MLP, written: Network | MLP) -> float:
    """max |written − given| over all entries (float arrays in float64; exact rationals exactly, then rounded)."""
    from fractions import Fraction

    from relusym.io._layers import affine_layers

    xs = [a for W, b, _, _ in affine_layers(given) for a in (W, b)]
    ys = [a for W, b, _, _ in affine_layers(written) for a in (W, b)]
    best = 0.0
    for x, y in zip(xs, ys, strict=True):
        if x.size == 0:
            continue
        if x.dtype != object and y.dtype != object:
            best = max(best, float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))))
        else:
            diffs = (
                abs(Fraction(u) - Fraction(v)) for u, v in zip(x.ravel().tolist(), y.ravel().tolist(), strict=True)
            )
            best = max(best, float(max(diffs)))
    return best


def exact_reduction(net: Network, dtype: Any) -> Any:
    """The largest reduction of a one-hidden-layer network whose every entry ``dtype`` (a float type, e.g. the
    file's float32) holds exactly: null, dead and constant neurons removed, neurons on the same hyperplane with
    the same orientation merged where their summed weights fit, θ's own rows kept.  Returns an object with
    ``network``, ``removed``, ``merged`` and ``unmerged`` (the pairs kept apart because their merge does not
    fit); ``relusym.prune`` gives the minimal network, which may need a wider type (``dtype="float64"``)."""
    from relusym._core.exact_reduction import exact_reduction as _exact_reduction

    return _exact_reduction(net, dtype)


def input_box(path: str | os.PathLike[str]) -> Any:
    """The input box of an NNet file (its per-input minima and maxima, exactly), a :class:`relusym.Box`."""
    from relusym.io._nnet_format import input_box as _input_box

    return _input_box(Path(path))
