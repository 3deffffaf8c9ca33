"""The protocol of a format module, as types that mypy checks.

Every format module (``_json_format``, ``_npz_format``, …) is a :class:`Format`: ``NAME``, ``SUFFIXES``,
``RECORDS_ACTIVATION``, ``sniff`` and ``load``.  A module that can do more says so by defining the functions of
one of the other protocols: :class:`Writer` (``save``), :class:`NotedReader` (``read``, with notes and the
activation it records for this file), :class:`ObjectReader` (``accepts``/``from_object``, for in-memory models),
:class:`ObjectActivation` and :class:`ReadBack`.  :mod:`relusym.io` asks a module for a capability with
``isinstance`` against these protocols (runtime-checkable: a module has the members or it does not), so every
call after the check is typed.

Conformance is checked statically: under ``TYPE_CHECKING`` the end of this module assigns every format module to
each protocol it implements, so mypy fails when a module's function drifts from its protocol (a missing
argument, another return type).  Importing the modules there costs nothing at run time (they load lazily).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from relusym._core.network import Network
from relusym._deep.mlp import MLP

__all__ = ["Format", "Writer", "NotedReader", "ObjectReader", "ObjectActivation", "ReadBack"]


@runtime_checkable
class Format(Protocol):
    """What every format module defines."""

    @property
    def NAME(self) -> str:  # noqa: N802 - a module constant
        """The format's name (``json``, ``onnx`` …), also the prefix of its size limit (``onnx_bytes``)."""

    @property
    def SUFFIXES(self) -> tuple[str, ...]:  # noqa: N802 - a module constant
        """The file suffixes that select this format for writing (lower case, with the dot)."""

    @property
    def RECORDS_ACTIVATION(self) -> bool:  # noqa: N802 - a module constant
        """Whether its files say which activation the network applies (else ReLU is assumed, and said)."""

    def sniff(self, path: Path, head: bytes) -> bool:
        """Whether the file at ``path``, whose first bytes are ``head``, is in this format."""

    def load(self, path: Path) -> Network | MLP:
        """The network in the file (one hidden layer: a ``Network``; more: an ``MLP``)."""


@runtime_checkable
class Writer(Format, Protocol):
    """A format relusym can write: exactly, or refused, or rounded on request (``policy``)."""

    def save(self, net: Network | MLP, path: Path, like: Path | None = None, *, policy: Any = None) -> None:
        """Write ``net`` to ``path`` (in the layout of the model ``like`` when given)."""


@runtime_checkable
class NotedReader(Format, Protocol):
    """A format whose reading has something to say: notes for a person and, for this file, whether the
    activation is recorded (None: the module's ``RECORDS_ACTIVATION``)."""

    def read(self, path: Path) -> tuple[Network | MLP, tuple[str, ...], bool | None]:
        """The network, the notes, and whether this file records the activation."""


@runtime_checkable
class ObjectReader(Format, Protocol):
    """A format with in-memory models (a torch module, an ONNX ModelProto, a Keras model …)."""

    def accepts(self, obj: Any) -> bool:
        """Whether ``obj`` is a model of this format (without importing the framework)."""

    def from_object(self, obj: Any) -> Network | MLP:
        """The network of the in-memory model ``obj``."""


@runtime_checkable
class ObjectActivation(Protocol):
    """A format whose in-memory models differ in whether they record the activation (a traced module does, a
    bare weight tree does not)."""

    def object_records_activation(self, obj: Any) -> bool:
        """Whether ``obj`` records its activation."""


@runtime_checkable
class ReadBack(Protocol):
    """A format whose own output ``load`` would refuse (pickles): reading back what was just written."""

    def read_back(self, path: Path) -> Network | MLP:
        """The network relusym has just written to ``path``."""


if TYPE_CHECKING:  # every format module conforms to the protocols it claims (checked by mypy, never run)
    import relusym.io._flax_format as _flax_format
    import relusym.io._folder_format as _folder_format
    import relusym.io._json_format as _json_format
    import relusym.io._keras_format as _keras_format
    import relusym.io._nnet_format as _nnet_format
    import relusym.io._npz_format as _npz_format
    import relusym.io._onnx_format as _onnx_format
    import relusym.io._safetensors_format as _safetensors_format
    import relusym.io._sklearn_format as _sklearn_format
    import relusym.io._torch_format as _torch_format

    _writers: list[Writer] = [
        _flax_format,
        _json_format,
        _keras_format,
        _nnet_format,
        _npz_format,
        _onnx_format,
        _safetensors_format,
        _sklearn_format,
        _torch_format,
    ]
    _formats: list[Format] = [*_writers, _folder_format]
    _noted: list[NotedReader] = [_folder_format, _keras_format, _nnet_format, _npz_format, _onnx_format, _torch_format]
    _objects: list[ObjectReader] = [
        _flax_format,
        _keras_format,
        _onnx_format,
        _safetensors_format,
        _sklearn_format,
        _torch_format,
    ]
    _object_activation: list[ObjectActivation] = [_flax_format, _keras_format, _torch_format]
    _read_back: list[ReadBack] = [_sklearn_format]
