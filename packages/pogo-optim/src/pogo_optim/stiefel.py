"""Small Stiefel-manifold helpers shared by the optimizers, tests and experiment.

Conventions: a point in the *rows* layout is a tensor ``X`` of shape ``(..., p, n)``
with ``p <= n`` and orthonormal rows, ``X X^H = I_p``; in the *columns* layout it has
shape ``(..., n, p)`` and orthonormal columns, ``X^H X = I_p``. Every leading
dimension is a batch of independent matrices. Tensors are real (``X^H = X^T``) or
complex (unitary matrices and their rectangular generalization).
"""

from __future__ import annotations

import torch

LAYOUTS = ("rows", "columns")


def as_rows(x: torch.Tensor, layout: str) -> torch.Tensor:
    """Return a view of ``x`` in the rows layout (a transpose for ``"columns"``).

    The plain transpose, also for complex tensors: ``X^H X = I`` gives
    ``X^T (X^T)^H = (X^H X)^T = I``.
    """
    return x if layout == "rows" else x.mT


def orthogonality_error(x: torch.Tensor, layout: str = "rows") -> torch.Tensor:
    """Distance to the manifold, ``||X X^H - I_p||_F`` per matrix.

    Args:
        x: Tensor of shape ``(..., p, n)`` (rows) or ``(..., n, p)`` (columns), real or
            complex.
        layout: ``"rows"`` or ``"columns"``.

    Returns:
        Tensor of shape ``(...)`` (a 0-d tensor for one matrix), in ``x``'s real dtype.
    """
    xr = as_rows(x, layout)
    p = xr.shape[-2]
    eye = torch.eye(p, dtype=xr.dtype, device=xr.device)
    return torch.linalg.matrix_norm(xr @ xr.mH - eye)


def project(x: torch.Tensor, layout: str = "rows") -> torch.Tensor:
    """Closest point of the Stiefel manifold (the polar factor ``U V^T`` of an SVD).

    Used only at construction when a user opts in (``project_init=True``) and by
    tests/experiments to build starting points; the optimizers' steps never
    decompose a matrix.

    Args:
        x: Tensor of shape ``(..., p, n)`` (rows) or ``(..., n, p)`` (columns) with
            ``p <= n`` and full rank ``p``, real or complex.
        layout: ``"rows"`` or ``"columns"``.

    Returns:
        A new tensor of ``x``'s shape with orthonormal rows (or columns).
    """
    u, _, vh = torch.linalg.svd(as_rows(x, layout), full_matrices=False)
    return as_rows(u @ vh, layout)


def random_stiefel(
    *shape: int,
    layout: str = "rows",
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """A Haar-distributed random point of the (real or complex) Stiefel manifold.

    The polar factor of a standard Gaussian matrix: since ``polar(Q G) = Q polar(G)``
    and the Gaussian is invariant under orthogonal (unitary) ``Q``, the result is
    uniformly distributed. Computed in double precision, then cast.

    Args:
        *shape: Full shape ``(..., p, n)`` (rows) or ``(..., n, p)`` (columns).
        layout: ``"rows"`` or ``"columns"``.
        generator: Optional torch generator (on the CPU) for reproducibility.
        dtype: Floating or complex dtype of the result (``torch.complex64`` for a
            unitary point).
        device: Device of the result.

    Returns:
        Tensor of the requested shape with orthonormal rows (or columns).
    """
    work = torch.complex128 if dtype.is_complex else torch.float64
    g = torch.randn(*shape, generator=generator, dtype=work)
    return project(g, layout).to(dtype=dtype, device=device)
