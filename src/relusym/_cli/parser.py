"""The argument parser of ``relusym``: one sub-command per question, usage errors as one sentence."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from relusym import __version__
from relusym._base.arguments import OneLineArgumentParser
from relusym._cli.census import add_census_parser
from relusym._cli.common import Result
from relusym._cli.compare import cmd_align, cmd_equiv, cmd_orbit, cmd_units
from relusym._cli.identify import cmd_identify
from relusym._cli.pictures import cmd_plot, cmd_report
from relusym._cli.prune import cmd_prune
from relusym._cli.single import cmd_canon, cmd_fiber, cmd_stabilizer
from relusym._cli.zoo import add_zoo_parser

__all__ = ["build_parser", "add_edge_options"]


def build_parser() -> argparse.ArgumentParser:
    p = OneLineArgumentParser(
        prog="relusym",
        description="Exact symmetries of ReLU networks: x ↦ V·σ(Ax + b) + c, and deep ones of any number of hidden "
        "layers. Networks are read from relusym JSON, NPZ, PyTorch, safetensors, ONNX, Keras, Flax, scikit-learn and "
        "NNet files and Hugging Face-style folders.",
    )
    p.add_argument("--version", action="version", version=f"relusym {__version__}")
    p.add_argument("--debug", action="store_true", help="print the traceback of any error (also after the command)")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no warnings (also after the command)")
    p.add_argument(
        "--limit",
        action="append",
        metavar="NAME=VALUE",
        help="change an input limit, e.g. --limit max_digits=5000 (see docs/reference/io.md; also RELUSYM_LIMITS)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], Result], help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print one JSON object instead of a report")
        add_edge_options(sp)
        sp.set_defaults(func=fn)
        return sp

    sp = add("canon", cmd_canon, "the normal form NF = (K, M, e): a complete invariant of the function")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("--all", action="store_true", help="print every kink class and M in full")
    sp.add_argument("--full", action="store_true", help="with --json: include kinks, M and e however large")
    sp.add_argument(
        "-o", "--output", metavar="OUT", default=None, help="also write the full normal form (.json, .npz, .parquet)"
    )

    sp = add("equiv", cmd_equiv, "decide whether two networks compute the same function, with a certificate")
    sp.add_argument("net1", metavar="NET1")
    sp.add_argument("net2", metavar="NET2")
    sp.add_argument(
        "--atol",
        type=float,
        default=None,
        help="tolerance mode: absolute tolerance; with --box/--box-from, ask whether |NET1 − NET2| ≤ ATOL at every "
        "input of the box (exit 0 yes, 1 no with an exact input, 4 undecided)",
    )
    sp.add_argument("--rtol", type=float, default=None, help="tolerance mode (on all of ℝ^m): relative tolerance")
    sp.add_argument(
        "--box",
        default=None,
        metavar="LO:HI|FILE",
        help="decide equality on a box only: LO:HI for every coordinate (negative bounds too: --box -1:1), or a JSON "
        'file {"lo": [...], "hi": [...]}',
    )
    sp.add_argument("--box-from", default=None, metavar="NET", help="decide on the input box of an NNet file")
    sp.add_argument(
        "--budget",
        type=float,
        default=5.0,
        help="deep networks, and --atol on a box: seconds for the search for a difference (default 5)",
    )

    sp = add("orbit", cmd_orbit, "decide whether NET2 = h·NET1 for a permutation-and-positive-scaling h")
    sp.add_argument("net1", metavar="NET1")
    sp.add_argument("net2", metavar="NET2")

    sp = add("units", cmd_units, "every hidden unit's status on a box: dead, active or crossing, proved exactly")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("--box", default=None, metavar="LO:HI|FILE", help="the box (as for equiv)")
    sp.add_argument("--box-from", default=None, metavar="NET", help="the input box of an NNet file")
    sp.add_argument("--budget", type=float, default=10.0, help="seconds for the proofs (default 10)")

    sp = add("stabilizer", cmd_stabilizer, "the stabilizer of a network in H_n (Theorem 2)")
    sp.add_argument("net", metavar="NET")

    sp = add("fiber", cmd_fiber, "the fibre: generic or not, rigidity, hidden flips, strata, dimension, width")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("--budget", type=float, default=10.0, help="seconds for the hard searches (default 10)")

    sp = add("prune", cmd_prune, "write the canonical minimal network (fewest neurons, same function)")
    sp.add_argument("net", metavar="NET")
    sp.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output file; its suffix chooses the format (NET's own layout when the formats agree)",
    )
    sp.add_argument("--budget", type=float, default=10.0, help="seconds for the width search (default 10)")
    sp.add_argument(
        "--box",
        default=None,
        metavar="LO:HI|FILE",
        help="also remove what is provably dead on this box (and fold what is provably active): the written network "
        "equals NET on the box only",
    )
    sp.add_argument("--box-from", default=None, metavar="NET", help="the same on the input box of an NNet file")
    sp.add_argument(
        "--allow-rounding",
        action="store_true",
        help="write a float file even when the minimal network is not exactly representable (the output says "
        "how far the written network is)",
    )
    sp.add_argument(
        "--dtype",
        choices=("float16", "bfloat16", "float32", "float64"),
        default=None,
        help="write every array in this float type (float64 keeps a float16/bfloat16 model's pruned network exact)",
    )

    sp = add("align", cmd_align, "align a noisy, permuted, rescaled copy NET2 onto NET1")
    sp.add_argument("net1", metavar="NET1")
    sp.add_argument("net2", metavar="NET2")

    sp = add("plot", cmd_plot, "draw the network (m = 1 graph, m = 2 arrangement, m > 2 slice)")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("net2", metavar="NET2", nargs="?")
    sp.add_argument("-o", "--output", required=True, metavar="FIG", help="figure file (.png, .svg, .pdf)")
    sp.add_argument(
        "--xlim",
        default=None,
        metavar="LO:HI",
        help="m = 1: the x range drawn (negative bounds too: --xlim -5:5); default: where the function changes",
    )
    sp.add_argument(
        "--box",
        "--domain",
        dest="box",
        default=None,
        metavar="LO:HI|FILE",
        help='m ≤ 2: draw on this box only (LO:HI for every coordinate, or a JSON file {"lo": [...], "hi": [...]})',
    )
    sp.add_argument("--box-from", default=None, metavar="NET", help="m ≤ 2: draw on the input box of an NNet file")

    add_census_parser(sub)

    sp = add("identify", cmd_identify, "recover a network of minimal width from queries to a black-box function")
    sp.add_argument("--oracle", required=True, metavar="MODULE:FUNCTION", help="the function to query (a batch "
                    "of float64 inputs (B, m) -> outputs (B, k); with --exact a list of tuples of Fractions -> "
                    "lists of k rationals)")  # fmt: skip
    sp.add_argument("--inputs", type=int, required=True, metavar="M", help="number of inputs m")
    sp.add_argument("--outputs", type=int, required=True, metavar="K", help="number of outputs k")
    sp.add_argument("-o", "--output", required=True, metavar="OUT", help="where to write the recovered network")
    sp.add_argument("--exact", action="store_true", help="the oracle is exact (rational in, rational out)")
    sp.add_argument("--budget", type=float, default=600.0, help="seconds (default 600)")
    sp.add_argument("--max-queries", type=int, default=None, help="a cap on oracle evaluations")
    sp.add_argument("--scale", type=float, default=1.0, help="size of the input region searched first (default 1)")
    sp.add_argument("--seed", type=int, default=0, help="seed of the random lines (default 0)")

    sp = add("report", cmd_report, "a self-contained HTML report: normal form, stabilizer, fibre, plots")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("-o", "--output", required=True, metavar="HTML")

    add_zoo_parser(add)
    return p


def add_edge_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--quiet", action="store_true", help="no progress bars (they appear only on a terminal)")
    sp.add_argument("--timings", action="store_true", help="include run times in --json output")
    sp.add_argument(
        "--allow-unsafe-pickle",
        action="store_true",
        help="read scikit-learn/joblib pickles and object .npy files, which RUNS CODE from the file",
    )
