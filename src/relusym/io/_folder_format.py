"""Model folders: a Hugging Face-style directory holding ``model.safetensors``, sharded safetensors with
``model.safetensors.index.json``, or ``pytorch_model.bin`` (read with ``weights_only=True``).  An orbax/Flax
checkpoint directory is recognised and refused with the way forward (its arrays live in tensorstore/zarr
files that relusym does not read).  The weights' shapes give the network; ``config.json``, when present, is read
for the activation only: ``"hidden_act": "relu"`` (or ``activation``, ``activation_function``, ...) records it, any
other activation is refused, and without one ReLU is assumed (and said).

Writing ``like`` a folder writes a folder (:func:`write_folder`): the weights file under its own name, in its
own layout, and ``config.json`` with the hidden width(s) replaced by the new ones; the folder's other small files
are copied."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import chain_linear_layers

__all__ = [
    "NAME",
    "SUFFIXES",
    "RECORDS_ACTIVATION",
    "sniff",
    "load",
    "read",
    "weights_file",
    "config_activation",
    "write_config",
    "check_target",
]

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


_ACTIVATION_KEYS = (
    "hidden_act",
    "hidden_activation",
    "activation",
    "activation_function",
    "act_fn",
    "nonlinearity",
    "activations",
)
_CONFIG_BYTES = 4 << 20


def _config(folder: Path) -> dict[str, Any] | None:
    """The folder's ``config.json`` as a dict, or None when there is none."""
    from relusym._base.limits import parse_json

    path = folder / "config.json"
    if not path.is_file():
        return None
    if path.stat().st_size > _CONFIG_BYTES:
        raise InvalidNetworkError(f"{path} is larger than {_CONFIG_BYTES} bytes; not a model configuration")
    try:
        data = parse_json(path.read_text(encoding="utf-8"), str(path), exact=False)
    except (UnicodeError, ValueError) as exc:
        raise InvalidNetworkError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InvalidNetworkError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


def config_activation(folder: Path) -> tuple[str, str] | None:
    """(key, value) of the activation ``config.json`` records, or None when it records none.  A value other than
    ReLU is refused, naming the key."""
    config = _config(Path(folder))
    if config is None:
        return None
    for key in _ACTIVATION_KEYS:
        if key not in config:
            continue
        value = config[key]
        values = value if isinstance(value, list) else [value]
        names = [str(v).strip().lower() for v in values]
        if not names or any(v != "relu" for v in names):
            raise UnsupportedModelError(
                f'{Path(folder) / "config.json"} says "{key}": {json.dumps(value)}; relusym reads ReLU networks '
                "only (this network applies another activation between its layers)"
            )
        return key, "relu"
    return None


def read(path: Path) -> tuple[Network | MLP, tuple[str, ...], bool | None]:
    """:func:`load`, and whether ``config.json`` records the ReLU (then the activation is not assumed)."""
    recorded = config_activation(Path(path))  # refuses another activation before the weights are read
    net = load(path)
    return net, (), True if recorded is not None else None


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


# ----------------------------------------------------------------------------------------------------------
# writing a folder

_WIDTH_WORDS = ("hidden", "intermediate", "width", "units", "neurons", "ffn", "d_ff")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".msgpack", ".h5", ".npz", ".onnx")
_COPY_BYTES = 16 << 20


def check_target(target: Path, like: Path) -> None:
    """A folder may be written at ``target``: it does not exist or is an empty folder, and is not ``like``."""
    from relusym.errors import OutputError

    if target.exists() and not target.is_dir():
        raise OutputError(f"cannot write the model folder {target}: a file of that name exists")
    if target.is_dir() and os.path.samefile(target, like):
        raise OutputError(f"cannot write {target}: it is the input folder {like}; choose another name")
    if target.is_dir() and any(target.iterdir()):
        raise OutputError(f"cannot write the model folder {target}: it exists and is not empty")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"cannot write {target}: the folder {parent} does not exist")


def _hidden_widths(net: Network | MLP) -> list[int]:
    return [net.n] if isinstance(net, Network) else list(net.widths[1:-1])


def write_config(target: Path, like: Path, old: Network | MLP, new: Network | MLP) -> list[str]:
    """``like``'s config.json with its hidden width(s) replaced by ``new``'s, and ``like``'s other small files,
    written into ``target``; the notes say what was changed or could not be."""
    from relusym._base.fileio import atomic_write

    notes: list[str] = []
    before, after = _hidden_widths(old), _hidden_widths(new)
    config = _config(like)
    if config is not None:
        changed: list[str] = []
        for key, value in list(config.items()):
            if not any(w in key.lower() for w in _WIDTH_WORDS):
                continue
            if isinstance(value, list) and value == before:
                config[key] = list(after)
                changed.append(key)
            elif isinstance(value, int) and not isinstance(value, bool) and before.count(value) == 1:
                config[key] = after[before.index(value)]
                changed.append(key)
        if before != after and not changed:
            notes.append(
                f"{like / 'config.json'} names no hidden width relusym recognises ({before}); it was copied "
                f"unchanged, so update it to the new width {after}"
            )
        elif changed:
            notes.append(
                f"config.json: {', '.join(changed)} set to the new width {after if len(after) > 1 else after[0]}"
            )
        text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        atomic_write(target / "config.json", lambda fh: fh.write(text.encode("utf-8")))
    for src in sorted(like.iterdir()):
        name = src.name
        if name == "config.json" or name.startswith(".") or src.is_symlink() or not src.is_file():
            continue
        if src.suffix.lower() in _WEIGHT_SUFFIXES or name.endswith(".index.json") or (target / name).exists():
            continue
        if src.stat().st_size > _COPY_BYTES:
            notes.append(f"{name} ({src.stat().st_size} bytes) was not copied")
            continue
        shutil.copyfile(src, target / name)
    return notes
