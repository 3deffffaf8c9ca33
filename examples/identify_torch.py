"""Recover a torch MLP from its forward function only, then compare with the real weights.

    python examples/identify_torch.py

The attacker sees nothing but ``forward``: a batch of inputs in, a batch of outputs out.  The truth (read from
the model's parameters by ``relusym.load``) is used only at the end, to measure the recovery.
"""

from __future__ import annotations

import math

import numpy as np
import torch

import relusym


def main() -> None:
    torch.manual_seed(0)
    m, n, k = 20, 32, 3
    model = torch.nn.Sequential(torch.nn.Linear(m, n), torch.nn.ReLU(), torch.nn.Linear(n, k)).double()

    def forward(X: np.ndarray) -> np.ndarray:  # the only access the attacker has
        with torch.no_grad():
            return model(torch.from_numpy(X)).numpy()

    res = relusym.identify(forward, m, k, rng=0)
    print(res.report())

    truth = relusym.load(model)  # only to check the result
    print()
    print("tolerance mode:", relusym.equivalent_approx(truth, res.network, rtol=1e-9))
    print(f"distance between the functions: {relusym.distance(truth, res.network):.3g}")
    if truth.n == res.network.n:
        print("alignment:", relusym.align(truth, res.network))
    print(f"queries: {res.queries} = 2^{math.log2(res.queries):.2f} (parameters: {truth.num_parameters})")


if __name__ == "__main__":
    main()
