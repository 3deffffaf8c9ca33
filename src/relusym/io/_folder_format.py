"""Model folders: a Hugging Face-style directory holding ``model.safetensors``, sharded safetensors with
``model.safetensors.index.json``, or ``pytorch_model.bin`` (read with ``weights_only=True``).  An orbax/Flax
checkpoint directory is recognised and refused with the way forward (its arrays live in tensorstore/zarr
files that relusym does not read).  ``config.json`` is not needed: the weights' shapes give the network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import chain_linear_layers

__all__ = ["NAME", "SUFFIXES", "RECORDS_ACTIVATION", "sniff", "load", "weights_file"]

NAME = "folder"
SUFFIXES: tuple[str, ...] = ()
RECORDS_ACTIVATION = False

_SINGLE = ("model.safetensors", "pytorch_model.bin", "model.pt", "model.pth")


def sniff(path: Path, head: bytes) -> bool:
    return Path(path).is_dir()


def weights_file(folder: Path) -> Path | None:
    """The single weights file of a model folder, when it has one."""
    for name in _SINGLE:
        if (folder / name).is_file():
            return folder / name
    return None


def _sharded(folder: Path) -> dict[str, Any]:
    from relusym.io._safetensors_format import read_arrays

    index_path = folder / "model.safetensors.index.json"
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
        weight_map = dict(index["weight_map"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidNetworkError(f"{index_path} is not a valid safetensors index ({exc})") from None
    arrays: dict[str, Any] = {}
    for shard in sorted(set(weight_map.values())):
        shard_path = folder / shard
        if not shard_path.is_file():
            raise InvalidNetworkError(f"{index_path.name} names the shard {shard}, which is not in {folder}")
        got, _ = read_arrays(shard_path)
        for key, arr in got.items():
            if weight_map.get(key) == shard:
                arrays[key] = arr
    missing = [k for k in weight_map if k not in arrays]
    if missing:
        raise InvalidNetworkError(f"{folder}: tensor '{missing[0]}' is not in the shard the index names")
    return arrays


def load(path: Path) -> Network | MLP:
    folder = Path(path)
    single = weights_file(folder)
    if single is not None:
        if single.suffix == ".safetensors":
            from relusym.io._safetensors_format import load as load_safetensors

            return load_safetensors(single)
        from relusym.io._torch_format import load as load_torch

        return load_torch(single)
    if (folder / "model.safetensors.index.json").is_file():
        return chain_linear_layers(_sharded(folder), source=folder.name, ordered=False).network()
    names = sorted(p.name for p in folder.iterdir())[:8]
    if (folder / "_METADATA").exists() or (folder / "_CHECKPOINT_METADATA").exists() or "default" in names:
        raise UnsupportedModelError(
            f"{folder} is an orbax checkpoint, whose arrays are stored by tensorstore; relusym reads them as data "
            "only from a msgpack file: restore the params and save them with flax.serialization.to_bytes"
        )
    raise UnsupportedModelError(
        f"{folder} is a folder without model.safetensors, model.safetensors.index.json or pytorch_model.bin "
        f"(it holds {', '.join(names) or 'nothing'}); pass the weights file itself"
    )
