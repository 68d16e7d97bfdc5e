"""The KKT conditions of NMF, as scale-free residuals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from enmf._linalg import matmul_left, matmul_right


@dataclass(frozen=True)
class KKTResiduals:
    """How far ``(W, H)`` is from a KKT point of ``min ||X - W H||_F^2, W, H >= 0``.

    At a KKT point ``W >= 0``, ``grad_W >= 0``, ``W * grad_W = 0`` (and the same for
    ``H``), with ``grad_W = (W H - X) H^T`` and ``grad_H = W^T (W H - X)``. Each field
    is 0 exactly there. Gradients are divided by the norm of their data term
    (``||X H^T||_F`` resp. ``||W^T X||_F``), so the residuals do not depend on the
    scale of ``X``.

    Attributes:
        negativity: Largest negative entry of ``W`` or ``H`` in magnitude, relative to
            the largest entry of that factor.
        dual_W: ``max(0, -min grad_W)``, relative.
        dual_H: ``max(0, -min grad_H)``, relative.
        complementarity_W: ``||W * grad_W||_F / (||W||_F ||X H^T||_F)``.
        complementarity_H: ``||H * grad_H||_F / (||H||_F ||W^T X||_F)``.
        projected_gradient: ``||P(grad)||_F`` over both factors, relative, where
            ``P`` keeps the gradient on positive entries and its negative part on zeros.
    """

    negativity: float
    dual_W: float
    dual_H: float
    complementarity_W: float
    complementarity_H: float
    projected_gradient: float

    @property
    def max(self) -> float:
        """The largest of the residuals."""
        return max(
            self.negativity,
            self.dual_W,
            self.dual_H,
            self.complementarity_W,
            self.complementarity_H,
            self.projected_gradient,
        )


def kkt_residuals(X: ArrayLike, W: ArrayLike, H: ArrayLike) -> KKTResiduals:
    """Compute the KKT residuals of the NMF problem at ``(W, H)``.

    Args:
        X: Data, shape (n, m), dense or scipy sparse.
        W: Shape (n, r).
        H: Shape (r, m).

    Returns:
        The residuals (:class:`KKTResiduals`).

    Raises:
        ValueError: If the shapes do not match.

    Example:
        >>> import numpy as np
        >>> from enmf import ENMF, kkt_residuals
        >>> X = np.random.default_rng(0).random((30, 10))
        >>> model = ENMF(3, tol=1e-8, max_iter=2000, random_state=0)
        >>> W = model.fit_transform(X)
        >>> kkt_residuals(X, W, model.components_).max < 1e-4
        True
    """
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    if X.ndim != 2 or W.ndim != 2 or H.ndim != 2:
        raise ValueError("X, W and H must be 2-D arrays")
    if W.shape[0] != X.shape[0] or H.shape[1] != X.shape[1] or W.shape[1] != H.shape[0]:
        raise ValueError(
            f"shapes do not match: X {X.shape}, W {W.shape}, H {H.shape}; expected "
            "X (n, m), W (n, r), H (r, m)"
        )
    tiny = np.finfo(float).tiny
    XHt = matmul_right(X, H.T)
    WtX = matmul_left(W.T, X)
    grad_W = W @ (H @ H.T) - XHt
    grad_H = (W.T @ W) @ H - WtX
    sW = max(float(np.linalg.norm(XHt)), tiny)
    sH = max(float(np.linalg.norm(WtX)), tiny)

    def negativity(F: np.ndarray) -> float:
        top = max(float(np.abs(F).max(initial=0.0)), tiny)
        return max(0.0, -float(F.min(initial=0.0))) / top

    def projected(F: np.ndarray, G: np.ndarray) -> np.ndarray:
        return np.where(F > 0, G, np.minimum(G, 0.0))

    pg = np.sqrt(
        (np.linalg.norm(projected(W, grad_W)) / sW) ** 2
        + (np.linalg.norm(projected(H, grad_H)) / sH) ** 2
    )
    return KKTResiduals(
        negativity=max(negativity(W), negativity(H)),
        dual_W=max(0.0, -float(grad_W.min(initial=0.0))) / sW,
        dual_H=max(0.0, -float(grad_H.min(initial=0.0))) / sH,
        complementarity_W=float(np.linalg.norm(W * grad_W))
        / max(float(np.linalg.norm(W)) * sW, tiny),
        complementarity_H=float(np.linalg.norm(H * grad_H))
        / max(float(np.linalg.norm(H)) * sH, tiny),
        projected_gradient=float(pg),
    )
