"""Cross-check of our OPG against an independent implementation, psdr's local-linear OPG.

psdr (PyPI ``psdr`` 0.3.10, J. Hokanson's Parameter Space Dimension Reduction toolbox) is
the one Python OPG we found; no Python implementation of (R)MAVE exists (RMAVE is checked
against a brute-force loop in ``tests/test_estimators.py``). psdr does not install with its
dependencies on Python 3.11 (it pins cvxpy 1.0.31, whose build fails, and satyrn does not
build either), and its package ``__init__`` imports all of them. Its OPG's gradient
estimator, ``psdr/local_linear.py``, needs only numpy and scipy, so this script installs
nothing: given the path of that file (``pip install --no-deps psdr==0.3.10`` into a
scratch environment), it loads the module from the file:

    uv run python packages/smave/benchmarks/crosscheck_psdr.py PATH/TO/psdr/local_linear.py

Two checks:

1. The local-linear gradients. psdr's ``local_linear_grads`` fits a weighted linear model
   at every point with a dense Gaussian kernel ``exp(-bandwidth |x_i - x_j|^2 / 2)``; our
   ``smave.criterion.local_linear_fit`` with the same weights over all points and no
   ridge must give the same slopes.
2. The subspace. psdr's OPG gradients (its default adaptive bandwidth, perplexity p + 1;
   the top eigenvectors of their mean outer product, which is what its
   OuterProductGradient keeps) and our OPG (nearest-neighbour kernel) on the same single-
   and multi-index data: both near the truth, and near each other. psdr is given
   whitened covariates: its OuterProductGradient maps a standardized basis back with
   ``std ** -0.5``, which is not the inverse of scaling by ``1 / std``.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
from smave import OPG, subspace_distance
from smave._base import whitening
from smave.criterion import local_linear_fit
from smave.synthetic import make_index_model


def _load_local_linear(path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("psdr_local_linear", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    psdr_ll = _load_local_linear(sys.argv[1])
    X, y, _ = make_index_model("single", 300, 5, np.random.default_rng(0))
    Z, _, _ = whitening(X)
    bw = 2.0
    g_psdr = psdr_ll.local_linear_grads(Z, y, bandwidth=bw)
    D = Z[None, :, :] - Z[:, None, :]  # (n, n, p): z_i - z_j for centre j, point i
    w = np.exp(-0.5 * bw * np.sum(D**2, axis=2))
    w /= w.sum(axis=1, keepdims=True)
    _, g_ours, _ = local_linear_fit(D, w, np.broadcast_to(y, w.shape), np.zeros(len(Z)))
    err = np.max(np.abs(g_ours - g_psdr)) / np.max(np.abs(g_psdr))
    print(f"1. local-linear gradients, n=300, p=5: max relative difference {err:.2e}")

    print("2. subspace distance to the truth and between the two OPGs (n=1000, p=6)")
    for model in ("single", "multi"):
        X, y, B0 = make_index_model(model, 1000, 6, np.random.default_rng(1))
        d = B0.shape[0]
        ours = OPG(d).fit(X, y)
        Z = (X - ours.mean_) @ ours.whitening_
        G = psdr_ll.local_linear_grads(Z, y)
        U = np.linalg.eigh(G.T @ G)[1][:, ::-1][:, :d]
        Q, _ = np.linalg.qr(ours.whitening_ @ U)  # back to X coordinates
        theirs = Q.T
        between = subspace_distance(ours.components_, theirs)
        print(
            f"   {model}: ours {subspace_distance(ours.components_, B0):.3f}, psdr "
            f"{subspace_distance(theirs, B0):.3f}, between {between:.3f}"
        )


if __name__ == "__main__":
    main()
