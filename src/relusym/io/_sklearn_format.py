"""scikit-learn: fitted ``MLPRegressor`` / ``MLPClassifier`` with ``activation='relu'`` and any number of hidden
layers (one gives a ``Network``, more an ``MLP``).

``coefs_[0]`` is m×n and ``coefs_[1]`` is n×k, so A = coefs_[0]ᵀ, b = intercepts_[0], V = coefs_[1]ᵀ and
c = intercepts_[1]; deeper, W_ℓ = coefs_[ℓ−1]ᵀ and b_ℓ = intercepts_[ℓ−1].  For a classifier the output
activation (softmax or logistic) is outside ρ: only the logits x ↦ V·relu(Ax + b) + c are read, and a warning
says so.

Pickle and joblib files run code when loaded, so :func:`load` refuses them; :func:`load_pickle` reads one only
with an explicit ``allow_unsafe_pickle=True``.
"""

from __future__ import annotations

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
    try:
        import joblib
    except ImportError:
        joblib = None
    if joblib is not None:
        obj = joblib.load(path)
    else:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)  # noqa: S301 - explicit opt-in above
    return from_object(obj)


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


def to_estimator(net: Network | MLP, dtype: Any = None, *, policy: WritePolicy | None = None) -> Any:
    """An ``MLPRegressor`` (hidden_layer_sizes = the hidden widths, activation='relu') whose ``predict`` computes
    the network (as a 1-D array when k = 1, as scikit-learn does), in ``dtype`` (float32 or float64; default the
    network's widest float dtype, float64 for rationals).  Every entry exact, or as ``policy`` allows."""
    sknn = _import_sklearn()
    policy = policy if policy is not None else WritePolicy()
    name = policy.dtype or (np.dtype(dtype).name if dtype is not None else common_dtype(net).name)
    if name not in ("float32", "float64"):
        if policy.dtype is not None or dtype is not None:
            raise InvalidNetworkError(f"scikit-learn MLPs hold float32 or float64 weights, not {name}")
        name = "float32"  # a float16 network: float32 holds it exactly
    fitted = [(policy.fit(W, name, wn), policy.fit(B, name, bn)) for W, B, wn, bn in affine_layers(net)]
    widths = widths_of(net)
    est = sknn.MLPRegressor(hidden_layer_sizes=tuple(widths[1:-1]), activation="relu")
    est.coefs_ = [np.ascontiguousarray(W.T) for W, _ in fitted]
    est.intercepts_ = [B.copy() for _, B in fitted]
    est.n_features_in_ = widths[0]
    est.n_outputs_ = widths[-1]
    est.n_layers_ = len(widths)
    est.out_activation_ = "identity"
    est.n_iter_ = 0
    est.t_ = 0
    est.loss_ = float("nan")
    est.loss_curve_ = []
    est.best_loss_ = None
    return est


def serializer_of(path: Path) -> str:
    """``"joblib"`` or ``"pickle"``: which one wrote a file, seen from its bytes (never by unpickling it).
    joblib stores numpy arrays through its own ``NumpyArrayWrapper`` class, which a plain pickle never names."""
    with open(path, "rb") as fh:
        data = fh.read(1 << 20)
    return "joblib" if b"joblib.numpy_pickle" in data or b"NumpyArrayWrapper" in data else "pickle"


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Dump an ``MLPRegressor`` computing the network, with the serializer that wrote ``like`` (joblib or
    pickle, seen from its bytes; ``like`` is never unpickled), else joblib when installed, else pickle."""
    est = to_estimator(net, policy=policy)
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
