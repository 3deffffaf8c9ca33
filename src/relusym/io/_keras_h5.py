"""The HDF5 side of Keras files: the weights of each layer read as exact arrays (bfloat16 widened exactly),
and a model's weights written back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import check_ratio, check_shape, shorten
from relusym.errors import UnsupportedModelError
from relusym.io._layers import (
    natural_key,
)

__all__ = ["h5_layers", "import_h5py", "write_h5"]


def import_h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise UnsupportedModelError("reading Keras files needs h5py: pip install 'relusym[keras]'") from None
    return h5py


# ----------------------------------------------------------------------------------------------------------
# reading
def _h5_child(group: Any, key: str, where: str) -> Any:  # where: the child, as the messages name it
    """``group[key]`` if it is a hard link in this file; an external or soft link is refused, never followed (it
    may point at any file on the machine)."""
    h5py = import_h5py()
    link = group.get(key, getlink=True)
    if isinstance(link, h5py.ExternalLink):
        raise UnsupportedModelError(
            f"{where} is an HDF5 external link to the file {shorten(Path(link.filename).name)}; "
            "relusym never follows it, and reads only data stored in the file itself"
        )
    if not isinstance(link, h5py.HardLink):
        raise UnsupportedModelError(
            f"{where} is an HDF5 {type(link).__name__}; relusym reads only data stored in the "
            "file itself, never through links"
        )
    return group[key]


def _is_bfloat16(ds: Any) -> bool:
    """Keras stores bfloat16 weights as 2-byte opaque values with the attribute ``dtype = "bfloat16"``."""
    tag = ds.attrs.get("dtype", "")
    tag = tag.decode() if isinstance(tag, bytes) else str(tag)
    return ds.dtype.kind == "V" and ds.dtype.itemsize == 2 and tag == "bfloat16"


def _widen_bfloat16(raw: np.ndarray) -> np.ndarray:
    """bfloat16 bits as float32 (their high half): exact, as the other formats read bfloat16."""
    return (np.ascontiguousarray(raw).view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(raw.shape)


def _h5_array(ds: Any, where: str) -> np.ndarray:
    """A dataset's array, after checking that its storage is in this file and that it declares no more than it
    stores (a compressed dataset of zeros or a shape with no storage is refused before it is read)."""
    h5py = import_h5py()
    if not isinstance(ds, h5py.Dataset):
        raise UnsupportedModelError(f"{where} is a {type(ds).__name__}, not an HDF5 dataset")
    if ds.is_virtual or ds.external:
        how = "a virtual dataset" if ds.is_virtual else "external storage"
        raise UnsupportedModelError(
            f"{where} keeps its data outside the file ({how}); relusym reads only data stored in the file itself"
        )
    bf16 = _is_bfloat16(ds)
    if ds.dtype.kind not in "fiub" and not bf16:
        raise UnsupportedModelError(f"{where} holds {ds.dtype}, not numbers")
    check_shape(ds.shape, where)
    check_ratio(int(ds.size) * ds.dtype.itemsize, int(ds.id.get_storage_size()), where)
    return _widen_bfloat16(np.asarray(ds[()])) if bf16 else np.asarray(ds[()])


def h5_layers(f: Any, source: str = "the HDF5 file") -> list[tuple[str, str, list[np.ndarray], list[str]]]:
    """(group, layer name, arrays, dtypes) for each ``layers/<group>/vars`` with arrays, in the file's order."""
    out = []
    if "layers" not in f:
        raise UnsupportedModelError("the HDF5 file has no 'layers' group: not a Keras 3 weights file")
    layers = _h5_child(f, "layers", f"{source}: layers")
    for group in sorted(layers.keys(), key=natural_key):
        where = f"{source}: layers/{shorten(group, 40)[1:-1]}"
        g = _h5_child(layers, group, where)
        if "vars" not in g:
            continue
        where = f"{where}/vars"
        vars_ = _h5_child(g, "vars", where)
        keys = sorted(vars_.keys(), key=natural_key)
        if not keys:
            continue
        children = [_h5_child(vars_, k, f"{where}/{k}") for k in keys]
        arrays = [_h5_array(c, f"{where}/{k}") for c, k in zip(children, keys, strict=True)]
        name = vars_.attrs.get("name", group)
        name = name.decode() if isinstance(name, bytes) else str(name)
        dts = ["bfloat16" if _is_bfloat16(c) else a.dtype.name for c, a in zip(children, arrays, strict=True)]
        out.append((group, name, arrays, dts))
    return out


def write_h5(target: Any, groups: list[tuple[str, str]], arrays: list[tuple[np.ndarray, np.ndarray]], top: str) -> None:
    h5py = import_h5py()
    with h5py.File(target, "w") as f:
        layers = f.create_group("layers")
        for (group, name), (kernel, bias) in zip(groups, arrays, strict=True):
            vars_ = layers.create_group(group).create_group("vars")
            vars_.attrs["name"] = name
            for key, arr in (("0", kernel), ("1", bias)):
                ds = vars_.create_dataset(key, data=arr)
                if arr.dtype.kind == "V":  # bfloat16 bits (see _arrays)
                    ds.attrs["dtype"] = "bfloat16"
        f.create_group("vars").attrs["name"] = top
