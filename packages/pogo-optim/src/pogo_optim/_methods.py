"""The methods compared in the experiment and the benchmarks, behind one small interface.

Each method owns one orthogonal tensor of shape ``(..., p, n)`` (rows layout, as
POGO sees it; geoopt's Stiefel manifold stores the transpose) and takes a step
on a loss of that tensor. Baselines come from their reference libraries:

- geoopt (``RiemannianAdam`` / ``RiemannianSGD``): its canonical Stiefel metric (Cayley
  retraction, one ``n x n`` linear solve per step) for square matrices and its
  Euclidean metric (QR retraction) for tall-thin ones, the faster of the two at each
  shape (measured: 4.9 vs 44.5 ms per step at 784 x 32; 3.6-4.2 vs 5.1-5.4 s at
  500 x 64 x 64);
- torch (``nn.utils.parametrizations.orthogonal`` + ``torch.optim.Adam`` or ``SGD``);
- the authors' ``pogo-torch`` release (import ``pogo``), with its VectorAdam or SGD
  base;

Landing is ours (:class:`pogo_optim.Landing`). A *family* is a method with several
configurations (base rule x learning rate); each family gets a grid of the same
size, and the experiment picks one configuration per family on validation seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from pogo_optim.optimizers import POGO, Landing

LossFn = Callable[[torch.Tensor], torch.Tensor]


class Runner:
    """One optimizer run on one orthogonal tensor."""

    def weight(self) -> torch.Tensor:
        """The current point, rows layout, detached."""
        raise NotImplementedError

    def step(self, loss_fn: LossFn) -> float:
        """One iteration (forward, backward, optimizer step); returns the loss."""
        raise NotImplementedError


@dataclass(frozen=True)
class Config:
    """One configuration of a family: a base rule (variant) and a learning rate."""

    family: str
    variant: str
    lr: float
    build: Callable[[torch.Tensor, float], Runner]
    ours: bool = False

    @property
    def label(self) -> str:
        """``"<variant>, lr <lr>"``."""
        return f"{self.variant}, lr {self.lr:g}"

    @property
    def key(self) -> str:
        """``"<family> | <variant> | <lr>"``, unique within an experiment."""
        return f"{self.family} | {self.variant} | {self.lr:g}"

    def make(self, x0: torch.Tensor) -> Runner:
        """A fresh run from ``x0``."""
        return self.build(x0, self.lr)


@dataclass(frozen=True)
class MethodSpec:
    """A method of the benchmarks: a label, a family of learning rates, a factory."""

    name: str
    lrs: tuple[float, ...]
    build: Callable[[torch.Tensor, float], Runner]
    ours: bool = False


class _TorchOptimizerRunner(Runner):
    def __init__(self, param: torch.Tensor, opt: torch.optim.Optimizer, rows_view) -> None:
        self.param = param
        self.opt = opt
        self.rows_view = rows_view

    def weight(self) -> torch.Tensor:
        return self.rows_view(self.param).detach()

    def step(self, loss_fn: LossFn) -> float:
        self.opt.zero_grad(set_to_none=True)
        loss = loss_fn(self.rows_view(self.param))
        loss.backward()
        self.opt.step()
        return float(loss.detach())


class _ParametrizedRunner(Runner):
    """torch's ``orthogonal`` parametrization of a weight, trained with Adam or SGD."""

    def __init__(self, x0: torch.Tensor, lr: float, kind: str = "adam") -> None:
        from torch.nn.utils import parametrizations

        self.module = torch.nn.Module()
        self.module.weight = torch.nn.Parameter(x0.clone())
        parametrizations.orthogonal(self.module, "weight")
        with torch.no_grad():
            self.module.weight = x0.clone()  # start from the same point as the others
        if kind == "adam":
            self.opt = torch.optim.Adam(self.module.parameters(), lr=lr)
        else:
            self.opt = torch.optim.SGD(self.module.parameters(), lr=lr, momentum=0.9)

    def weight(self) -> torch.Tensor:
        with torch.no_grad():
            return self.module.weight.detach().clone()

    def step(self, loss_fn: LossFn) -> float:
        self.opt.zero_grad(set_to_none=True)
        loss = loss_fn(self.module.weight)
        loss.backward()
        self.opt.step()
        return float(loss.detach())


class _NoOpRunner(Runner):
    """The floor: forward and backward, no update (the point stays at ``x0``)."""

    def __init__(self, x0: torch.Tensor, lr: float = 0.0) -> None:
        self.param = torch.nn.Parameter(x0.clone())

    def weight(self) -> torch.Tensor:
        return self.param.detach()

    def step(self, loss_fn: LossFn) -> float:
        self.param.grad = None
        loss = loss_fn(self.param)
        loss.backward()
        return float(loss.detach())


def _ours(cls, **kwargs) -> Callable[[torch.Tensor, float], Runner]:
    def build(x0: torch.Tensor, lr: float) -> Runner:
        param = torch.nn.Parameter(x0.clone())
        return _TorchOptimizerRunner(param, cls([param], lr=lr, **kwargs), lambda p: p)

    return build


def geoopt_manifold(rows_shape: tuple[int, ...]):
    """Geoopt's faster Stiefel manifold for a ``(..., p, n)`` rows-layout shape.

    Canonical (Cayley retraction, an ``n x n`` solve) for square and nearly square
    matrices, Euclidean (QR retraction of the ``n x p`` storage) when ``n >= 2 p``.
    """
    import geoopt

    p, n = rows_shape[-2:]
    return geoopt.EuclideanStiefel() if n >= 2 * p else geoopt.Stiefel()


def _geoopt(kind: str) -> Callable[[torch.Tensor, float], Runner]:
    def build(x0: torch.Tensor, lr: float) -> Runner:
        import geoopt

        param = geoopt.ManifoldParameter(
            x0.mT.contiguous().clone(), manifold=geoopt_manifold(tuple(x0.shape))
        )
        if kind == "adam":
            opt = geoopt.optim.RiemannianAdam([param], lr=lr)
        else:
            opt = geoopt.optim.RiemannianSGD([param], lr=lr, momentum=0.9)
        return _TorchOptimizerRunner(param, opt, lambda p: p.mT)

    return build


def _pogo_torch(kind: str) -> Callable[[torch.Tensor, float], Runner]:
    def build(x0: torch.Tensor, lr: float) -> Runner:
        from pogo import POGO as AuthorsPOGO
        from pogo import base

        squeeze = x0.dim() == 2  # the release works on (batch, p, n) tensors only
        param = torch.nn.Parameter((x0.unsqueeze(0) if squeeze else x0).clone())
        rule = (
            base.VectorAdam(betas=(0.9, 0.999), eps=1e-8)
            if kind == "vadam"
            else (base.SGD(momentum=0.9))
        )
        opt = AuthorsPOGO([param], rule, lr)
        return _TorchOptimizerRunner(param, opt, (lambda p: p[0]) if squeeze else (lambda p: p))

    return build


def _parametrized(kind: str) -> Callable[[torch.Tensor, float], Runner]:
    def build(x0: torch.Tensor, lr: float) -> Runner:
        return _ParametrizedRunner(x0, lr, kind)

    return build


def pogo_torch_available() -> bool:
    """Whether the authors' release ``pogo-torch`` imports in this environment."""
    try:
        from pogo import POGO as _  # noqa: F401
    except Exception:  # a broken install must not take the experiment down
        return False
    return True


POGO_FAMILY = "POGO (ours)"
ABLATION_FAMILY = "POGO, max_step 1 (ablation)"
AUTHORS_FAMILY = "pogo-torch (authors)"
FLOOR = "no-op step (floor)"

# Base-rule variants of each family and the builder of one configuration.
_FAMILIES: dict[str, list[tuple[str, str, Callable[[str], Callable]]]] = {
    POGO_FAMILY: [
        ("SGDm", "sgd", lambda k: _ours(POGO, base="sgd", momentum=0.9)),
        ("VAdam", "vadam", lambda k: _ours(POGO, base="vadam")),
    ],
    ABLATION_FAMILY: [
        ("SGDm", "sgd", lambda k: _ours(POGO, base="sgd", momentum=0.9, max_step=1.0)),
        ("VAdam", "vadam", lambda k: _ours(POGO, base="vadam", max_step=1.0)),
    ],
    "Landing": [
        ("SGDm", "sgd", lambda k: _ours(Landing, base="sgd", momentum=0.9)),
        ("VAdam", "vadam", lambda k: _ours(Landing, base="vadam")),
    ],
    "geoopt": [
        ("RSGDm", "sgd", lambda k: _geoopt("sgd")),
        ("RAdam", "adam", lambda k: _geoopt("adam")),
    ],
    "torch orthogonal": [
        ("SGDm", "sgd", lambda k: _parametrized("sgd")),
        ("Adam", "adam", lambda k: _parametrized("adam")),
    ],
    AUTHORS_FAMILY: [
        ("SGDm", "sgd", lambda k: _pogo_torch("sgd")),
        ("VAdam", "vadam", lambda k: _pogo_torch("vadam")),
    ],
}


def families(grids: dict[str, tuple[float, ...]]) -> dict[str, list[Config]]:
    """Every family's configurations: each base-rule variant on its learning-rate grid.

    Args:
        grids: Learning-rate grid per kind of base rule: ``"sgd"`` (SGD with momentum
            0.9: POGO, Landing, geoopt RSGD, parametrization, pogo-torch), ``"vadam"``
            (VectorAdam: a Frobenius step length) and ``"adam"`` (elementwise Adam:
            geoopt RAdam, parametrization). Every family gets two variants on grids
            of the same size.

    Returns:
        ``{family: [Config, ...]}``; pogo-torch only when it imports.
    """
    out: dict[str, list[Config]] = {}
    for fam, variants in _FAMILIES.items():
        if fam == AUTHORS_FAMILY and not pogo_torch_available():
            continue
        out[fam] = [
            Config(fam, label, lr, make(kind), ours=fam == POGO_FAMILY)
            for label, kind, make in variants
            for lr in grids[kind]
        ]
    return out


def floor_config() -> Config:
    """The trivial floor: a step that does not move (forward and backward only)."""
    return Config(FLOOR, "none", 0.0, _NoOpRunner)


def methods(*, sgd_lrs, adam_lrs, vadam_lrs, include_parametrization: bool = True):
    """The benchmarked methods (one fixed variant each), each with a learning-rate grid.

    Args:
        sgd_lrs: Grid for SGD-momentum methods (POGO-SGD, Landing, geoopt RSGD).
        adam_lrs: Grid for elementwise-Adam methods (geoopt RAdam, parametrization).
        vadam_lrs: Grid for VectorAdam methods (POGO, pogo-torch): Frobenius step lengths.
        include_parametrization: Include torch's orthogonal parametrization.

    Returns:
        A list of :class:`MethodSpec`.
    """
    specs = [
        MethodSpec("POGO-VAdam (ours)", vadam_lrs, _ours(POGO, base="vadam"), ours=True),
        MethodSpec("POGO-SGDm (ours)", sgd_lrs, _ours(POGO, base="sgd", momentum=0.9), ours=True),
    ]
    if pogo_torch_available():
        specs.append(MethodSpec("pogo-torch VAdam (authors)", vadam_lrs, _pogo_torch("vadam")))
    specs += [
        MethodSpec("Landing SGDm", sgd_lrs, _ours(Landing, base="sgd", momentum=0.9)),
        MethodSpec("geoopt RiemannianAdam", adam_lrs, _geoopt("adam")),
        MethodSpec("geoopt RiemannianSGD m", sgd_lrs, _geoopt("sgd")),
    ]
    if include_parametrization:
        specs.append(MethodSpec("torch orthogonal + Adam", adam_lrs, _parametrized("adam")))
    return specs
