"""``relusym identify``: a network of minimal width from queries to a black-box function."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from relusym._base.arguments import progress_flag
from relusym._cli.common import Result, check_output
from relusym.errors import InvalidNetworkError

__all__ = ["cmd_identify", "load_oracle"]


def load_oracle(spec: str) -> Any:
    """``module:function`` (a module on the import path, or a .py file) to a callable."""
    import importlib
    import importlib.util

    mod_name, sep, fn_name = spec.rpartition(":")
    if not sep or not mod_name or not fn_name:
        raise InvalidNetworkError(f"--oracle must be MODULE:FUNCTION (or path/to/file.py:FUNCTION), got {spec!r}")
    if mod_name.endswith(".py"):
        path = Path(mod_name)
        if not path.is_file():
            raise InvalidNetworkError(f"--oracle: no such file {mod_name!r}")
        loader_spec = importlib.util.spec_from_file_location(path.stem, path)
        if loader_spec is None or loader_spec.loader is None:  # pragma: no cover - a .py file always has one
            raise InvalidNetworkError(f"--oracle: cannot import {mod_name!r}")
        module = importlib.util.module_from_spec(loader_spec)
        loader_spec.loader.exec_module(module)
    else:
        if "" not in sys.path:
            sys.path.insert(0, "")
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise InvalidNetworkError(f"--oracle: cannot import module {mod_name!r} ({exc})") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise InvalidNetworkError(f"--oracle: {mod_name!r} has no callable {fn_name!r}")
    return fn


def cmd_identify(args: argparse.Namespace) -> Result:
    from relusym._identify.identify import identify
    from relusym.io import save

    if args.inputs < 1 or args.outputs < 1:
        raise InvalidNetworkError("--inputs and --outputs must be positive integers")
    check_output(args.output)
    oracle = load_oracle(args.oracle)
    res = identify(
        oracle,
        args.inputs,
        args.outputs,
        exact=args.exact,
        budget=args.budget,
        max_queries=args.max_queries,
        rng=args.seed,
        progress=progress_flag(args),
        scale=args.scale,
    )
    save(res.network, args.output)
    d = res.to_dict()
    d["output"] = args.output
    return d, res.report() + f"\nwrote {args.output}", 0
