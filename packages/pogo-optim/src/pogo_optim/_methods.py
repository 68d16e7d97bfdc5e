"""The methods compared in the experiment and the benchmarks, behind one small interface.

Each method owns one orthogonal tensor of shape ``(..., p, n)`` (rows layout, as
POGO sees it; geoopt's Stiefel manifold stores the transpose) and takes a step
on a loss of that tensor. Baselines come from their reference libraries: geoopt
(``RiemannianAdam``/``RiemannianSGD`` on ``geoopt.Stiefel()``, its default canonical
metric with the Cayley retraction, which solves a linear system per step), torch
(``nn.utils.parametrizations.orthogonal`` + ``torch.optim.Adam``), and the authors'
``pogo-torch`` release (import ``pogo``); Landing is ours (:class:`pogo_optim.Landing`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from pogo_optim.optimizers import POGO, Landing

LossFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class MethodSpec:
    """A method of the comparison: a label, a family of learning rates, a factory."""

    name: str
    lrs: tuple[float, ...]
    build: Callable[[torch.Tensor, float], Runner]
    ours: bool = False


class Runner:
    """One optimizer run on one orthogonal tensor."""

    def weight(self) -> torch.Tensor:
        """The current point, rows layout, detached."""
        raise NotImplementedError

    def step(self, loss_fn: LossFn) -> float:
        """One iteration (forward, backward, optimizer step); returns the loss."""
        raise NotImplementedError


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
    """torch's ``orthogonal`` parametrization of a weight, trained with Adam."""

    def __init__(self, x0: torch.Tensor, lr: float) -> None:
        from torch.nn.utils import parametrizations

        self.module = torch.nn.Module()
        self.module.weight = torch.nn.Parameter(x0.clone())
        parametrizations.orthogonal(self.module, "weight")
        with torch.no_grad():
            self.module.weight = x0.clone()  # start from the same point as the others
        self.opt = torch.optim.Adam(self.module.parameters(), lr=lr)

    def weight(self) -> torch.Tensor:
        with torch.no_grad():
            return self.module.weight.detach().clone()

    def step(self, loss_fn: LossFn) -> float:
        self.opt.zero_grad(set_to_none=True)
        loss = loss_fn(self.module.weight)
        loss.backward()
        self.opt.step()
        return float(loss.detach())


def _ours(cls, **kwargs) -> Callable[[torch.Tensor, float], Runner]:
    def build(x0: torch.Tensor, lr: float) -> Runner:
        param = torch.nn.Parameter(x0.clone())
        return _TorchOptimizerRunner(param, cls([param], lr=lr, **kwargs), lambda p: p)

    return build


def _geoopt(kind: str) -> Callable[[torch.Tensor, float], Runner]:
    def build(x0: torch.Tensor, lr: float) -> Runner:
        import geoopt

        param = geoopt.ManifoldParameter(x0.mT.contiguous().clone(), manifold=geoopt.Stiefel())
        if kind == "adam":
            opt = geoopt.optim.RiemannianAdam([param], lr=lr)
        else:
            opt = geoopt.optim.RiemannianSGD([param], lr=lr, momentum=0.9)
        return _TorchOptimizerRunner(param, opt, lambda p: p.mT)

    return build


def _pogo_torch(x0: torch.Tensor, lr: float) -> Runner:
    from pogo import POGO as AuthorsPOGO
    from pogo import base

    squeeze = x0.dim() == 2  # the release works on (batch, p, n) tensors only
    param = torch.nn.Parameter((x0.unsqueeze(0) if squeeze else x0).clone())
    opt = AuthorsPOGO([param], base.VectorAdam(betas=(0.9, 0.999), eps=1e-8), lr)
    return _TorchOptimizerRunner(param, opt, (lambda p: p[0]) if squeeze else (lambda p: p))


def pogo_torch_available() -> bool:
    """Whether the authors' release ``pogo-torch`` imports in this environment."""
    try:
        from pogo import POGO as _  # noqa: F401
    except Exception:  # a broken install must not take the experiment down
        return False
    return True


def methods(*, sgd_lrs, adam_lrs, vadam_lrs, include_parametrization: bool = True):
    """The compared methods, each with its learning-rate grid.

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
        specs.append(MethodSpec("pogo-torch VAdam (authors)", vadam_lrs, _pogo_torch))
    specs += [
        MethodSpec("Landing SGDm", sgd_lrs, _ours(Landing, base="sgd", momentum=0.9)),
        MethodSpec("geoopt RiemannianAdam", adam_lrs, _geoopt("adam")),
        MethodSpec("geoopt RiemannianSGD m", sgd_lrs, _geoopt("sgd")),
    ]
    if include_parametrization:
        specs.append(MethodSpec("torch orthogonal + Adam", adam_lrs, _ParametrizedRunner))
    return specs
