"""scikit-learn: fitted ``MLPRegressor`` / ``MLPClassifier`` with ``activation='relu'`` and any number of hidden
layers (one gives a ``Network``, more an ``MLP``).

``coefs_[0]`` is m×n and ``coefs_[1]`` is n×k, so A = coefs_[0]ᵀ, b = intercepts_[0], V = coefs_[1]ᵀ and
c = intercepts_[1]; deeper, W_ℓ = coefs_[ℓ−1]ᵀ and b_ℓ = intercepts_[ℓ−1].  For a classifier the output
activation (softmax or logistic) is outside ρ: only the logits x ↦ V·relu(Ax + b) + c are read, and a warning
says so.

Pickle and joblib files run code when loaded, so :func:`load` refuses them; :func:`load_pickle` reads one only
with an explicit ``allow_unsafe_pickle=True``.

Writing with ``like`` (the file the network was read from) keeps the estimator: its class (an ``MLPClassifier``
stays one), its classes, label binarizer, output activation, feature names and hyper-parameters; only the weights
and the hidden layer sizes change (the optimizer's state, shaped like the old weights, is dropped).  Keeping them
needs ``like`` unpickled, which runs its code: allowed when ``allow_unsafe_pickle=True`` was passed to
:func:`relusym.io.save`, or when this process read that same unchanged file with ``allow_unsafe_pickle=True``.
"""

from __future__ import annotations

import copy
import os
import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import WritePolicy, affine_layers, common_dtype, exact_float_array, shaped, widths_of

__all__ = [
    "NAME",
    "SUFFIXES",
    "RECORDS_ACTIVATION",
    "sniff",
    "load",
    "load_pickle",
    "save",
    "accepts",
    "from_object",
    "from_estimator",
    "to_estimator",
    "serializer_of",
    "read_back",
    "LogitsOnlyWarning",
]

NAME = "sklearn"
RECORDS_ACTIVATION = True
SUFFIXES: tuple[str, ...] = (".pkl", ".pickle", ".joblib")

_TORCH_LEGACY = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


class LogitsOnlyWarning(UserWarning):
    """The estimator's output activation (softmax/logistic) is not part of the network that was read."""


def _import_sklearn() -> Any:
    try:
        import sklearn.neural_network as sknn
    except ImportError:
        raise UnsupportedModelError(
            "reading scikit-learn models needs scikit-learn: pip install 'relusym[sklearn]'"
        ) from None
    return sknn


def sniff(path: Path, head: bytes) -> bool:
    """A pickle (protocol 2–5) that is not a legacy torch.save file, or a .pkl/.pickle/.joblib name."""
    if head.startswith(_TORCH_LEGACY):
        return False
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return True
    return path.suffix.lower() in SUFFIXES


def _refusal(path: Path) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"refusing to unpickle {path.name}: loading a pickle or joblib file runs arbitrary code; if you trust it, "
        "pass --allow-unsafe-pickle (CLI) or relusym.load(path, allow_unsafe_pickle=True)"
    )


def load(path: Path, *, allow_unsafe_pickle: bool = False) -> Network | MLP:
    """Refuses, since unpickling runs code, unless ``allow_unsafe_pickle=True`` (see :func:`load_pickle`)."""
    if not allow_unsafe_pickle:
        raise _refusal(Path(path))
    return load_pickle(path, allow_unsafe_pickle=True)


def load_pickle(path: Path | str, *, allow_unsafe_pickle: bool = False) -> Network | MLP:
    """Read a pickled or joblib-dumped fitted MLP.  This RUNS CODE from the file: only for trusted files, and
    only with ``allow_unsafe_pickle=True``."""
    path = Path(path)
    if not allow_unsafe_pickle:
        raise _refusal(path)
    warnings.warn(
        f"unpickling {path.name} runs any code it contains; do this only for files you trust",
        RuntimeWarning,
        stacklevel=2,
    )
    obj = _unpickle(path)
    net = from_object(obj)
    _remember(path, obj)
    return net


def _unpickle(path: Path) -> Any:
    try:
        import joblib
    except ImportError:
        joblib = None
    if joblib is not None:
        return joblib.load(path)
    with open(path, "rb") as fh:
        return pickle.load(fh)  # noqa: S301 - only after an explicit opt-in


# estimators read with allow_unsafe_pickle=True in this process, by file identity, so that writing a pruned
# network "like" that file keeps its head without unpickling it again (the opt-in was given for that file)
_TRUSTED: dict[tuple[Any, ...], Any] = {}


def _identity(path: Path) -> tuple[Any, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember(path: Path, est: Any) -> None:
    key = _identity(path)
    if key is not None and hasattr(est, "coefs_"):
        if len(_TRUSTED) > 16:
            _TRUSTED.clear()
        _TRUSTED[key] = copy.deepcopy(est)


def accepts(obj: Any) -> bool:
    """A scikit-learn estimator (no sklearn import)."""
    return any((c.__module__ or "").startswith("sklearn.") for c in type(obj).__mro__)


def from_object(obj: Any) -> Network | MLP:
    return from_estimator(obj)


def from_estimator(est: Any) -> Network | MLP:
    """The network of a fitted ReLU ``MLPRegressor``/``MLPClassifier``: a ``Network`` for one hidden layer, an
    ``MLP`` for more (logits for a classifier; a :class:`LogitsOnlyWarning` says so)."""
    sknn = _import_sklearn()
    name = type(est).__name__
    if hasattr(est, "steps") and hasattr(est, "named_steps"):
        raise UnsupportedModelError(
            f"got a {name}; preprocessing steps are not part of the network: pass its final MLP step "
            "(pipeline[-1]) and apply the preprocessing to the inputs yourself"
        )
    if not isinstance(est, sknn.MLPRegressor | sknn.MLPClassifier):
        raise UnsupportedModelError(f"{name} is not an MLPRegressor or MLPClassifier")
    if not hasattr(est, "coefs_"):
        raise UnsupportedModelError(f"this {name} is not fitted (it has no coefs_); call fit() first")
    if est.activation != "relu":
        raise UnsupportedModelError(f"this {name} uses activation={est.activation!r}; relusym needs 'relu'")
    if len(est.coefs_) < 2:
        raise UnsupportedModelError(f"this {name} has no hidden layer; relusym reads ReLU networks with at least one")
    out_act = getattr(est, "out_activation_", "identity")
    if out_act != "identity":
        warnings.warn(
            f"{name}: its output activation {out_act!r} is outside the network x ↦ V·relu(Ax + b) + c (or its "
            "deep form); relusym reads and classifies the logits only",
            LogitsOnlyWarning,
            stacklevel=3,
        )
    layers = []
    for i, (W, B) in enumerate(zip(est.coefs_, est.intercepts_, strict=True)):
        Wa = exact_float_array(W, f"{name}.coefs_[{i}]")
        Ba = exact_float_array(B, f"{name}.intercepts_[{i}]")
        if Wa.ndim != 2 or Ba.shape != (Wa.shape[1],):
            raise InvalidNetworkError(
                f"{name}.coefs_[{i}] has shape {Wa.shape} and intercepts_[{i}] {Ba.shape}: not a layer of an MLP"
            )
        layers.append((Wa.T, Ba))
    return shaped(layers)


def to_estimator(net: Network | MLP, dtype: Any = None, *, policy: WritePolicy | None = None, like: Any = None) -> Any:
    """An estimator whose ``predict`` computes the network (as a 1-D array when k = 1, as scikit-learn does), in
    ``dtype`` (float32 or float64; default ``like``'s weights' dtype, else the network's widest float dtype,
    float64 for rationals).  Every entry exact, or as ``policy`` allows.

    Without ``like``, an ``MLPRegressor`` (hidden_layer_sizes = the hidden widths, activation='relu').  With
    ``like`` (a fitted ReLU ``MLPRegressor`` or ``MLPClassifier`` with as many inputs, outputs and layers), a copy
    of it with the new weights and hidden layer sizes: its class, ``classes_``, label binarizer, output activation,
    ``n_outputs_``, feature names and hyper-parameters are kept, so a classifier's ``predict`` and
    ``predict_proba`` work as before on the new weights."""
    sknn = _import_sklearn()
    policy = policy if policy is not None else WritePolicy()
    widths = widths_of(net)
    if like is not None:
        _check_like(like, widths)
    if policy.dtype is not None:
        name = policy.dtype
    elif dtype is not None:
        name = np.dtype(dtype).name
    elif like is not None:
        name = np.asarray(like.coefs_[0]).dtype.name
    else:
        name = common_dtype(net).name
    if name not in ("float32", "float64"):
        if policy.dtype is not None or dtype is not None:
            raise InvalidNetworkError(f"scikit-learn MLPs hold float32 or float64 weights, not {name}")
        name = "float32"  # a float16 network: float32 holds it exactly
    fitted = [(policy.fit(W, name, wn), policy.fit(B, name, bn)) for W, B, wn, bn in affine_layers(net)]
    if like is not None:
        est = copy.deepcopy(like)
        est.hidden_layer_sizes = tuple(widths[1:-1])
        for attr in ("_optimizer", "_best_coefs", "_best_intercepts"):  # shaped like the old weights
            if attr in est.__dict__:
                delattr(est, attr)
    else:
        est = sknn.MLPRegressor(hidden_layer_sizes=tuple(widths[1:-1]), activation="relu")
        est.n_features_in_ = widths[0]
        est.n_outputs_ = widths[-1]
        est.out_activation_ = "identity"
        est.n_iter_ = 0
        est.t_ = 0
        est.loss_ = float("nan")
        est.loss_curve_ = []
        est.best_loss_ = None
    est.coefs_ = [np.ascontiguousarray(W.T) for W, _ in fitted]
    est.intercepts_ = [B.copy() for _, B in fitted]
    est.n_layers_ = len(widths)
    return est


def _check_like(like: Any, widths: tuple[int, ...]) -> None:
    """``like`` is a fitted ReLU MLP with the network's inputs, outputs and number of layers."""
    sknn = _import_sklearn()
    name = type(like).__name__
    if not isinstance(like, sknn.MLPRegressor | sknn.MLPClassifier) or not hasattr(like, "coefs_"):
        raise UnsupportedModelError(f"like holds a {name}, not a fitted MLPRegressor or MLPClassifier")
    theirs = (int(like.coefs_[0].shape[0]), *(int(c.shape[1]) for c in like.coefs_))
    if len(theirs) != len(widths) or theirs[0] != widths[0] or theirs[-1] != widths[-1]:
        raise InvalidNetworkError(
            f"the network has widths {widths} but the like {name} has {theirs}; relusym writes a network in the "
            "estimator of one with the same inputs, outputs and number of layers"
        )


def _class_in_bytes(path: Path) -> str | None:
    """The MLP class a pickle names, seen from its bytes (never by unpickling it)."""
    with open(path, "rb") as fh:
        data = fh.read(1 << 20)
    for cls in ("MLPClassifier", "MLPRegressor"):
        if cls.encode() in data:
            return cls
    return None


def _like_estimator(like: Path, policy: WritePolicy) -> Any:
    """The estimator in ``like``: from this process's earlier trusted read of that same file, or unpickled when
    the caller allowed it; None for a regressor that may not be unpickled (an ``MLPRegressor`` is then written,
    which is what it was); a classifier that may not be unpickled is refused (its classes would be lost)."""
    key = _identity(like)
    if key is not None and key in _TRUSTED:
        return _TRUSTED[key]
    if policy.allow_unsafe_pickle:
        return _unpickle(like)
    if _class_in_bytes(like) == "MLPRegressor":
        return None
    raise UnsupportedModelError(
        f"writing like {like.name} keeps its estimator (its classes, label binarizer and output activation), which "
        "needs unpickling it, and that runs any code it contains: if you trust it, pass allow_unsafe_pickle=True "
        "(CLI --allow-unsafe-pickle)"
    )


def serializer_of(path: Path) -> str:
    """``"joblib"`` or ``"pickle"``: which one wrote a file, seen from its bytes (never by unpickling it).
    joblib stores numpy arrays through its own ``NumpyArrayWrapper`` class, which a plain pickle never names."""
    with open(path, "rb") as fh:
        data = fh.read(1 << 20)
    return "joblib" if b"joblib.numpy_pickle" in data or b"NumpyArrayWrapper" in data else "pickle"


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Dump an ``MLPRegressor`` computing the network, with the serializer that wrote ``like`` (joblib or
    pickle, seen from its bytes), else joblib when installed, else pickle.  With ``like``, its estimator with the
    new weights (see :func:`to_estimator`; ``like`` is unpickled only as the module docstring says)."""
    policy = policy if policy is not None else WritePolicy()
    template = _like_estimator(Path(like), policy) if like is not None else None
    est = to_estimator(net, policy=policy, like=template)
    try:
        import joblib
    except ImportError:
        joblib = None
    use_joblib = joblib is not None and (like is None or serializer_of(Path(like)) == "joblib")
    if like is not None and serializer_of(Path(like)) == "joblib" and joblib is None:
        raise UnsupportedModelError(f"{Path(like).name} was written by joblib, which is not installed")
    if use_joblib:
        joblib.dump(est, path)
        return
    with open(path, "wb") as fh:
        pickle.dump(est, fh, protocol=pickle.HIGHEST_PROTOCOL)


def read_back(path: Path) -> Network | MLP:
    """Read a file this module has just written (relusym's own output: unpickling it runs no foreign code)."""
    if serializer_of(Path(path)) == "joblib":
        import joblib

        return from_object(joblib.load(path))
    with open(path, "rb") as fh:
        return from_object(pickle.load(fh))  # noqa: S301 - our own file, written a moment ago
