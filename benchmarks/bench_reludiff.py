"""relusym beside ReluDiff on the verifiers' own question: |f(x) − f16(x)| ≤ ε on an ACAS Xu property box (issue 22).

    python benchmarks/bench_reludiff.py --reludiff DIR [--acas-dir DIR] [--nets 1_1,1_2] [--eps 0.05]
                                        [--budget SECONDS] [--timeout SECONDS]

DIR (``--reludiff``) is a build of ReluDiff's artifact (github.com/pauls658/ReluDiff-ICSE2020-Artifact, folder
``DiffNN-Code``: ``make CFLAGS="-Wall -O3 -fcommon"`` with libopenblas-dev installed); it is run as a separate
program, nothing of it is imported.  For each ACAS Xu network N (``ACASXU_run2a_<N>_batch_2000.nnet`` in
``--acas-dir``) the benchmark makes ReluDiff's own compressed copy (its ``python/round_nnet.py``: every weight and
bias rounded to float16) and asks both tools whether the two networks' outputs differ by at most ε on the input box
of ACAS Xu property 1 (ReluDiff's ``load_inputs``: 55947.691 ≤ ρ ≤ 60760, −3.141592 ≤ θ, ψ ≤ 3.141592,
1145 ≤ v_own ≤ 1200, 0 ≤ v_int ≤ 60):

* ReluDiff: ``delta_network_test 1 N.nnet N_16bit.nnet ε`` ("verified" when it prints "No adv!"), its outputs in
  the network's normalised units, floating point throughout (it is not a proof in exact arithmetic).  It checks
  one output only, the property's "target" (``nnet->target``, output 0 for property 1: ``check_epsilon_interval``
  in its split.c), so relusym is asked the same question on output 0, and then on all five outputs;
* relusym: ``relusym.equivalent(f, f16, domain=box, atol=ε·range_out, budget=…)`` on the two files loaded with
  ``relusym.load`` (the NNet normalisation folded in exactly, so the outputs are in raw units, hence ε times the
  file's output range), answering "yes" with a sound exact upper bound, "no" with an exact input inside the box, or
  "undecided" with the bracket.

Printed per network: each tool's answer and CPU and wall time (ReluDiff's CPU from ``resource`` of the child), and
relusym's bracket [lower, upper] on max |f − f16| (raw units); then the load average.

    python benchmarks/bench_reludiff.py --bracket [--acas-dir DIR] [--nets …] [--budget SECONDS]

prints instead (no ReluDiff needed) the distance bracket of ``relusym.distance`` for each network against its copy
rounded to float16 after loading (the NNet normalisation folded in, as ``bench_deep_box_equiv.py``'s f16 pairs),
on the box the file records and on property 1's box: lower (exact input), upper (proved), their ratio (the goal of
issue 22 is ≤ 2 in under a minute) and the CPU time.

    python benchmarks/bench_reludiff.py --float-study [--acas-dir DIR] [--nets …] [--budget SECONDS]

measures, in floats only (nothing proved), what the relaxations reach on the same pairs: on 64 random sub-boxes of
each box at side fractions 1, 0.1, 0.01, the median and largest float bound of the forward symbolic differences
(as the exact pass computes them), of the same cut by CROWN's bounds of each network, and of the back-substituted
differences (:mod:`relusym._deep.diff_backsub`), beside the largest gap of 500 float samples per sub-box; then how
far a best-first partition gets in ``--budget`` CPU seconds (forward bounds, and cut by CROWN's).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread: threads only contend on a loaded machine

import argparse
import resource
import subprocess
import sys
import time
import warnings
from fractions import Fraction

import numpy as np

import relusym

PROPERTY_1 = (
    ("55947.691", "-3.141592", "-3.141592", "1145", "0"),
    ("60760", "3.141592", "3.141592", "1200", "60"),
)


def output_range(path: str) -> Fraction:
    """The NNet file's output range (the last entry of its line of ranges)."""
    lines = [ln for ln in open(path, encoding="ascii") if not ln.startswith("//")]
    return Fraction(lines[6].strip().rstrip(",").split(",")[-1])


def run_reludiff(tool: str, original: str, rounded: str, eps: float, timeout: float) -> tuple[str, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            ["./delta_network_test", "1", original, rounded, str(eps)],
            cwd=tool,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        answer = "verified" if "No adv!" in done.stderr + done.stdout else "not verified"
    except subprocess.TimeoutExpired:
        answer = "timeout"
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return answer, cpu, wall


def output_only(net: relusym.MLP, i: int) -> relusym.MLP:
    """The network with its output i only (ReluDiff checks one output, the property's "target")."""
    return relusym.MLP([*net.weights[:-1], net.weights[-1][i : i + 1]], [*net.biases[:-1], net.biases[-1][i : i + 1]])


def run_relusym(
    original: str, rounded: str, eps: float, budget: float, output: int | None = None
) -> tuple[str, float, float, float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f, g = relusym.load(original), relusym.load(rounded)
    if output is not None:
        f, g = output_only(f, output), output_only(g, output)
    box = relusym.Box(*[[Fraction(v) for v in side] for side in PROPERTY_1])
    atol = Fraction(str(eps)) * output_range(original)
    c0, t0 = time.process_time(), time.perf_counter()
    v = relusym.equivalent(f, g, domain=box, atol=atol, budget=budget)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return str(v.answer), cpu, wall, float(v.lower), float(v.upper)


def f16_loaded(net: relusym.MLP) -> relusym.MLP:
    """Every weight and bias of the loaded network (normalisation folded in) rounded to float16."""

    def r(v: object) -> Fraction:
        return Fraction(float(np.float16(float(v))))  # type: ignore[arg-type]

    return relusym.MLP(
        [[[r(v) for v in row] for row in w.tolist()] for w in net.weights],
        [[r(v) for v in b.tolist()] for b in net.biases],
    )


def brackets(acas: str, nets: list[str], budget: float) -> None:
    print(f"load at start: {', '.join(f'{v:.2f}' for v in os.getloadavg())}; budget {budget} s per pair\n")
    print("| network | box | lower (exact input) | upper (proved) | upper/lower | boxes | CPU | wall |")
    print("|---|---|---|---|---|---|---|---|")
    for name in nets:
        path = os.path.join(acas, f"ACASXU_run2a_{name}_batch_2000.nnet")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = relusym.load(path)
            file_box = relusym.io.input_box(path)
        g = f16_loaded(f)
        prop1 = relusym.Box(*[[Fraction(v) for v in side] for side in PROPERTY_1])
        for label, box in (("file", file_box), ("property 1", prop1)):
            c0, t0 = time.process_time(), time.perf_counter()
            d = relusym.distance(f, g, domain=box, budget=budget)
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            ratio = float(d.upper / d.lower) if d.lower else float("inf")
            print(
                f"| {name} | {label} | {float(d.lower):.4g} | {float(d.upper):.4g} | {ratio:.3g} | {d.regions} "
                f"| {cpu:.1f} s | {wall:.1f} s |",
                flush=True,
            )
    print(f"\nload at the end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


def _study_boxes(name: str, acas: str) -> tuple[relusym.MLP, relusym.MLP, list[tuple[str, relusym.Box]]]:
    path = os.path.join(acas, f"ACASXU_run2a_{name}_batch_2000.nnet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = relusym.load(path)
        file_box = relusym.io.input_box(path)
    prop1 = relusym.Box(*[[Fraction(v) for v in side] for side in PROPERTY_1])
    return f, f16_loaded(f), [("file", file_box), ("property 1", prop1)]


def float_study(acas: str, nets: list[str], budget: float) -> None:
    from relusym._deep.bounds import ExactLayers
    from relusym._deep.box_diff import FloatPair, float_diff_bounds, propose_partition
    from relusym._deep.diff_backsub import backsub_diff_bounds
    from relusym._deep.witness import FloatNet

    print(f"load at start: {', '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    print("| network | box | side | forward: median, max | + CROWN cut | back-substituted | sampled gap max | ms/box |")
    print("|---|---|---|---|---|---|---|---|")
    runs = []
    for name in nets:
        f, g, boxes = _study_boxes(name, acas)
        L1, L2 = ExactLayers.of(f), ExactLayers.of(g)
        for label, box in boxes:
            n1, n2 = FloatNet(L1, box.lo, box.hi), FloatNet(L2, box.lo, box.hi)
            plain = FloatPair(L1.Wf, L1.bf, L2.Wf, L2.bf)
            cut = FloatPair(L1.Wf, L1.bf, L2.Wf, L2.bf, (n1, n2))
            lo = np.array([float(v) for v in box.lo])
            hi = np.array([float(v) for v in box.hi])
            rng = np.random.default_rng(0)
            C = rng.random((64, len(lo)))
            for side in (1.0, 0.1, 0.01):
                a, b = np.clip(C - side / 2, 0, 1), np.clip(C + side / 2, 0, 1)
                x, y = lo + (hi - lo) * a, lo + (hi - lo) * b
                fw = float_diff_bounds(plain, x, y).upper
                c0 = time.process_time()
                tab = cut.crown(a, b)
                fc = float_diff_bounds(cut, x, y, tab).upper
                bs = backsub_diff_bounds(cut, x, y, tab).upper
                ms = (time.process_time() - c0) / len(a) * 1000
                gaps = []
                for i in range(len(a)):
                    U = a[i] + (b[i] - a[i]) * rng.random((500, len(lo)))
                    gaps.append(np.abs(n1.preactivations(U)[-1] - n2.preactivations(U)[-1]).max())
                cells = " | ".join(f"{np.median(v):.3g}, {v.max():.3g}" for v in (fw, fc, bs))
                print(f"| {name} | {label} | {side} | {cells} | {max(gaps):.3g} | {ms:.1f} |", flush=True)
            runs.append((name, label, plain, cut, lo, hi))
    print("\n| network | box | partition | boxes | largest float bound | CPU |")
    print("|---|---|---|---|---|---|")
    for name, label, plain, cut, lo, hi in runs:
        for how, P, bounder in (
            ("forward", plain, float_diff_bounds),
            ("+ CROWN cut", cut, float_diff_bounds),
            ("back-substituted", cut, backsub_diff_bounds),
        ):
            c0 = time.process_time()
            ulo, uhi = propose_partition(P, lo, hi, 0.0, 10**7, lambda: time.process_time() - c0 > budget, bounder)
            cpu = time.process_time() - c0  # the partition's; its boxes' bounds are recomputed below
            worst = max(
                float(
                    bounder(
                        P,
                        lo + (hi - lo) * ulo[i : i + 512],
                        lo + (hi - lo) * uhi[i : i + 512],
                        P.crown(ulo[i : i + 512], uhi[i : i + 512]),
                    ).upper.max()
                )
                for i in range(0, len(ulo), 512)
            )
            print(
                f"| {name} | {label} | {how} | {len(ulo)} | {worst:.4g} | {cpu:.1f} s |",
                flush=True,
            )
    print(f"\nload at the end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reludiff", help="ReluDiff's built DiffNN-Code folder (required unless --bracket)")
    ap.add_argument("--bracket", action="store_true", help="only relusym's distance brackets (see above)")
    ap.add_argument("--float-study", action="store_true", help="what the float relaxations reach (see above)")
    ap.add_argument("--acas-dir", default=None, help="the ACAS Xu NNet files (default: ReluDiff's own nnet/)")
    ap.add_argument("--nets", default="1_1,1_2,2_1")
    ap.add_argument("--eps", type=float, default=0.05)
    ap.add_argument("--budget", type=float, default=60.0, help="relusym's budget per pair (s)")
    ap.add_argument("--timeout", type=float, default=600.0, help="ReluDiff's time per pair (s)")
    args = ap.parse_args()
    if args.float_study:
        float_study(args.acas_dir or "/work/shared/data/acasxu", args.nets.split(","), args.budget)
        return
    if args.bracket:
        brackets(args.acas_dir or "/work/shared/data/acasxu", args.nets.split(","), args.budget)
        return
    if not args.reludiff:
        ap.error("--reludiff DIR is required unless --bracket")
    tool = os.path.abspath(args.reludiff)
    acas = os.path.abspath(args.acas_dir or os.path.join(tool, "nnet"))
    out = os.path.join(tool, "compressed_nnets")
    os.makedirs(out, exist_ok=True)
    print(f"load at start: {os.getloadavg()[0]:.1f}; ε = {args.eps} (normalised outputs) on property 1's box\n")
    print("| network | ReluDiff (output 0) | CPU | wall | relusym, output 0 | CPU | wall | bracket, raw "
          "| relusym, all 5 outputs | CPU | bracket, raw |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.nets.split(","):
        original = os.path.join(acas, f"ACASXU_run2a_{name}_batch_2000.nnet")
        rounded = os.path.join(out, f"ACASXU_run2a_{name}_batch_2000_16bit.nnet")
        if not os.path.exists(rounded):
            subprocess.run([sys.executable, "python/round_nnet.py", original, rounded], cwd=tool, check=True)
        ra, rc, rw = run_reludiff(tool, original, rounded, args.eps, args.timeout)
        ya, yc, yw, lo, hi = run_relusym(original, rounded, args.eps, args.budget, output=0)
        za, zc, _, zlo, zhi = run_relusym(original, rounded, args.eps, args.budget)
        print(
            f"| {name} | {ra} | {rc:.1f} s | {rw:.1f} s | {ya} | {yc:.1f} s | {yw:.1f} s | [{lo:.3g}, {hi:.3g}] "
            f"| {za} | {zc:.1f} s | [{zlo:.3g}, {zhi:.3g}] |",
            flush=True,
        )
    print(f"\nload at the end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
