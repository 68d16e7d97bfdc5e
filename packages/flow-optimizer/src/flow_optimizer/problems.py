"""Problem classes for FlowOptimizer: batched torch objectives with bounds.

A :class:`Problem` is one instance: ``f(X)`` maps a population ``X`` of shape
``(N, d)`` to ``(N,)`` objective values (differentiable torch ops, so the gradient comes
from autograd unless a subclass overrides :meth:`Problem.value_and_grad`), with box
bounds ``lower``/``upper`` of shape ``(d,)``. A *family* (:class:`ProblemFamily`)
draws instances with ``sample_instance(rng, dim)``; FlowOptimizer trains on draws of a
family and is tested on draws with other seeds.

Families: shifted and rotated Rastrigin, Ackley, Rosenbrock and Levy (shift
U[-2, 2]^d, a Haar-random rotation), planar n-link arm inverse kinematics with joint
limits (reachable targets), a multi-product newsvendor with a capacity (sample
average over demand scenarios; its optimum from an LP, for evaluation only), and DC
economic dispatch on a pandapower grid (PTDF line flows; its optimum from pandapower's
DC OPF, for evaluation only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_int

__all__ = [
    "FAMILIES",
    "Ackley",
    "ArmIK",
    "DCDispatch",
    "Levy",
    "Newsvendor",
    "Problem",
    "ProblemFamily",
    "Rastrigin",
    "Rosenbrock",
    "family",
]


class Problem:
    """One objective instance: ``f(X) -> (N,)``, box bounds, optional known optimum value.

    Attributes:
        dim: Dimension ``d``.
        lower: Lower bounds, float64 tensor ``(d,)``; None if the problem has none.
        upper: Upper bounds, float64 tensor ``(d,)``; None if the problem has none.
        optimum: The optimal value where known (for reporting gaps; never read in
            training), else None.
        lower_bound: A value ``f`` never goes below (0 for the nonnegative families), or
            None. Stage-2 fine-tuning uses it to put the loss on a log scale.
    """

    dim: int
    lower: torch.Tensor | None
    upper: torch.Tensor | None
    optimum: float | None = None
    lower_bound: float | None = None
    name: str = "problem"

    def f(self, X: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """Objective values of each row of ``X`` (shape ``(N, d)``), shape ``(N,)``."""
        raise NotImplementedError

    def value_and_grad(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Values ``(N,)`` and gradients ``(N, d)`` at each row of ``X`` (autograd), detached."""
        with torch.enable_grad():
            Xg = X.detach().requires_grad_(True)
            F = self.f(Xg)
            (G,) = torch.autograd.grad(F.sum(), Xg)
        return F.detach(), G.detach()

    def sample_uniform(self, n: int, generator: torch.Generator, dtype: Any) -> torch.Tensor:
        """``n`` points uniform in the bounds, shape ``(n, d)``.

        Raises:
            ValueError: If the problem has no bounds.
        """
        if self.lower is None or self.upper is None:
            raise ValueError(
                f"problem {self.name!r} has no bounds (lower/upper is None); the sampler "
                "needs them to draw a starting population"
            )
        u = torch.rand(n, self.dim, generator=generator, dtype=torch.float64)
        lo, hi = self.lower, self.upper
        return (lo + u * (hi - lo)).to(dtype)


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return rng


def _rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


class _ShiftedRotated(Problem):
    """``f(x) = base(R (x - s)) (+ 1 for Rosenbrock)``: optimum value 0 at ``x = s``."""

    def __init__(self, base: str, shift: np.ndarray, rot: np.ndarray, bound: float) -> None:
        d = len(shift)
        self.name, self.dim = base, d
        self.shift = torch.as_tensor(shift, dtype=torch.float64)
        self.rot = torch.as_tensor(rot, dtype=torch.float64)
        self.lower = torch.full((d,), -bound, dtype=torch.float64)
        self.upper = torch.full((d,), bound, dtype=torch.float64)
        self.optimum = 0.0
        self.lower_bound = 0.0

    def f(self, X: torch.Tensor) -> torch.Tensor:
        Z = (X - self.shift.to(X)) @ self.rot.to(X).T
        return BASE_FUNCTIONS[self.name](Z)


def rastrigin(Z: torch.Tensor) -> torch.Tensor:
    """Rastrigin ``10 d + sum(z^2 - 10 cos(2 pi z))``, rows of ``Z`` ``(N, d)`` -> ``(N,)``."""
    return 10.0 * Z.shape[-1] + (Z**2 - 10.0 * torch.cos(2 * math.pi * Z)).sum(-1)


def ackley(Z: torch.Tensor) -> torch.Tensor:
    """Ackley (a=20, b=0.2, c=2 pi), minimum 0 at z = 0."""
    d = Z.shape[-1]
    r = torch.sqrt((Z**2).sum(-1) / d + 1e-30)
    c = torch.cos(2 * math.pi * Z).sum(-1) / d
    return -20.0 * torch.exp(-0.2 * r) - torch.exp(c) + 20.0 + math.e


def rosenbrock(Z: torch.Tensor) -> torch.Tensor:
    """Rosenbrock of ``z + 1`` (so the minimum 0 is at z = 0)."""
    Y = Z + 1.0
    return (100.0 * (Y[..., 1:] - Y[..., :-1] ** 2) ** 2 + (1.0 - Y[..., :-1]) ** 2).sum(-1)


def levy(Z: torch.Tensor) -> torch.Tensor:
    """Levy of ``z + 1`` (``w = 1 + z / 4``), minimum 0 at z = 0."""
    W = 1.0 + Z / 4.0
    a = torch.sin(math.pi * W[..., 0]) ** 2
    mid = ((W[..., :-1] - 1) ** 2 * (1 + 10 * torch.sin(math.pi * W[..., :-1] + 1) ** 2)).sum(-1)
    last = (W[..., -1] - 1) ** 2 * (1 + torch.sin(2 * math.pi * W[..., -1]) ** 2)
    return a + mid + last


BASE_FUNCTIONS = {"rastrigin": rastrigin, "ackley": ackley, "rosenbrock": rosenbrock, "levy": levy}


class ProblemFamily:
    """A class of problems: ``sample_instance(rng, dim)`` draws one :class:`Problem`."""

    name = "family"

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:  # pragma: no cover
        """Draw one instance of dimension ``dim`` with the numpy generator ``rng``."""
        raise NotImplementedError


@dataclass(frozen=True)
class _Benchmark(ProblemFamily):
    base: str
    bound: float = 5.0
    max_shift: float = 2.0

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.base

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:
        """A shifted (U[-2, 2]^d) and rotated instance in the box [-5, 5]^d.

        Raises:
            ValueError: If ``dim < 1`` (``dim < 2`` for Rosenbrock).
            TypeError: If ``rng`` is not a ``np.random.Generator``.
        """
        dim = check_int("dim", dim, low=2 if self.base == "rosenbrock" else 1)
        rng = _check_rng(rng)
        shift = rng.uniform(-self.max_shift, self.max_shift, dim)
        return _ShiftedRotated(self.base, shift, _rotation(rng, dim), self.bound)


def Rastrigin() -> ProblemFamily:
    """Shifted, rotated Rastrigin in [-5, 5]^d (optimum 0)."""
    return _Benchmark("rastrigin")


def Ackley() -> ProblemFamily:
    """Shifted, rotated Ackley in [-5, 5]^d (optimum 0)."""
    return _Benchmark("ackley")


def Rosenbrock() -> ProblemFamily:
    """Shifted, rotated Rosenbrock in [-5, 5]^d (optimum 0)."""
    return _Benchmark("rosenbrock")


def Levy() -> ProblemFamily:
    """Shifted, rotated Levy in [-5, 5]^d (optimum 0)."""
    return _Benchmark("levy")


class _ArmInstance(Problem):
    def __init__(self, target: np.ndarray, lengths: np.ndarray, limit: float) -> None:
        d = len(lengths)
        self.name, self.dim = "arm-ik", d
        self.target = torch.as_tensor(target, dtype=torch.float64)
        self.lengths = torch.as_tensor(lengths, dtype=torch.float64)
        self.lower = torch.full((d,), -limit, dtype=torch.float64)
        self.upper = torch.full((d,), limit, dtype=torch.float64)
        self.optimum = 0.0  # the target is reachable by construction
        self.lower_bound = 0.0

    def end_effector(self, X: torch.Tensor) -> torch.Tensor:
        """Planar end-effector position ``(N, 2)`` of joint angles ``X`` ``(N, d)`` (radians)."""
        phi = torch.cumsum(X, dim=-1)
        L = self.lengths.to(X)
        return torch.stack([(L * torch.cos(phi)).sum(-1), (L * torch.sin(phi)).sum(-1)], -1)

    def f(self, X: torch.Tensor) -> torch.Tensor:
        return ((self.end_effector(X) - self.target.to(X)) ** 2).sum(-1)


@dataclass(frozen=True)
class ArmIK(ProblemFamily):
    """Planar ``d``-link arm inverse kinematics: squared distance of the tip to a target.

    Links of equal length ``1 / d`` (reach 1), relative joint angles in
    ``[-limit, limit]`` radians. The target is the tip at angles drawn uniformly in the
    limits, so it is reachable and the optimum value is 0 (``optimum``).

    Args:
        limit: Joint limit in radians (default 2.0).
    """

    limit: float = 2.0
    name = "arm-ik"

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:
        """Draw a reachable target for a ``dim``-link arm.

        Raises:
            ValueError: If ``dim < 1``.
            TypeError: If ``rng`` is not a ``np.random.Generator``.
        """
        dim = check_int("dim", dim, low=1)
        rng = _check_rng(rng)
        lengths = np.full(dim, 1.0 / dim)
        theta = rng.uniform(-self.limit, self.limit, dim)
        phi = np.cumsum(theta)
        target = np.array([(lengths * np.cos(phi)).sum(), (lengths * np.sin(phi)).sum()])
        return _ArmInstance(target, lengths, self.limit)


class _NewsvendorInstance(Problem):
    def __init__(
        self, price: np.ndarray, cost: np.ndarray, demand: np.ndarray, capacity: float
    ) -> None:
        d = len(price)
        self.name, self.dim = "newsvendor", d
        self.price = torch.as_tensor(price, dtype=torch.float64)
        self.cost = torch.as_tensor(cost, dtype=torch.float64)
        self.demand = torch.as_tensor(demand, dtype=torch.float64)  # (S, d)
        self.capacity = float(capacity)
        self.penalty = 2.0 * float(price.max())  # exact penalty: > any capacity multiplier
        self.lower = torch.zeros(d, dtype=torch.float64)
        self.upper = torch.full((d,), 3.0, dtype=torch.float64)
        self.lower_bound = None
        self._optimum: float | None = None

    @property
    def optimum(self) -> float:  # type: ignore[override]
        """LP optimum of the sample-average problem, solved on first access (reporting only)."""
        if self._optimum is None:
            self._optimum = _newsvendor_lp(
                self.price.numpy(), self.cost.numpy(), self.demand.numpy(), self.capacity, 3.0
            )
        return self._optimum

    def f(self, X: torch.Tensor) -> torch.Tensor:
        D = self.demand.to(X)
        sold = torch.minimum(X[:, None, :], D[None]).mean(1)  # (N, d) expected sales
        profit = (sold * self.price.to(X)).sum(-1) - (X * self.cost.to(X)).sum(-1)
        excess = torch.relu(X.sum(-1) - self.capacity)
        return -profit + self.penalty * excess


def _newsvendor_lp(
    price: np.ndarray, cost: np.ndarray, demand: np.ndarray, capacity: float, upper: float
) -> float:
    """Optimal negative expected profit of the sample-average newsvendor (HiGHS LP)."""
    try:
        from scipy.optimize import linprog
    except ImportError:  # pragma: no cover - scipy is in the repro extra
        return float("nan")
    S, d = demand.shape
    # variables: x (d), y (S*d) with y_sj <= x_j, y_sj <= D_sj; minimise c.x - mean p.y
    c = np.concatenate([cost, -np.tile(price, S) / S])
    rows = []
    for s in range(S):
        for j in range(d):
            r = np.zeros(d + S * d)
            r[d + s * d + j] = 1.0
            r[j] = -1.0
            rows.append(r)
    cap = np.concatenate([np.ones(d), np.zeros(S * d)])
    A = np.vstack([np.array(rows), cap])
    b = np.concatenate([np.zeros(S * d), [capacity]])
    bounds = [(0.0, upper)] * d + [(0.0, float(v)) for v in demand.ravel()]
    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    return float(res.fun) if res.status == 0 else float("nan")


@dataclass(frozen=True)
class Newsvendor(ProblemFamily):
    """Multi-product newsvendor with a shared capacity, as ``f = -expected profit + penalty``.

    Order quantities ``x`` in ``[0, 3]^d``; demand ``S`` scenarios, lognormal with
    means U[0.5, 1.5] and log-sd 0.5; price U[5, 10]; unit cost a U[0.3, 0.7] fraction
    of the price; capacity 60% of the total mean demand; exact penalty
    ``2 max(price) * max(0, sum x - capacity)``. ``optimum`` is the LP optimum of the
    same sample-average problem (reporting only).

    Args:
        scenarios: Number of demand scenarios ``S`` (default 50).
    """

    scenarios: int = 50
    name = "newsvendor"

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:
        """Draw prices, costs and demand scenarios for ``dim`` products.

        Raises:
            ValueError: If ``dim < 1``.
            TypeError: If ``rng`` is not a ``np.random.Generator``.
        """
        dim = check_int("dim", dim, low=1)
        rng = _check_rng(rng)
        mean = rng.uniform(0.5, 1.5, dim)
        demand = mean * np.exp(0.5 * rng.standard_normal((self.scenarios, dim)) - 0.125)
        price = rng.uniform(5.0, 10.0, dim)
        cost = price * rng.uniform(0.3, 0.7, dim)
        return _NewsvendorInstance(price, cost, demand, 0.6 * float(mean.sum()))


@dataclass(frozen=True)
class _GridModel:
    """The load-independent part of a DC model of one pandapower case."""

    ptdf: np.ndarray  # (lines, buses), internal bus order
    gen_bus: np.ndarray  # (G,) internal bus of each generator (ext grids first, then gens)
    load_bus: np.ndarray  # (loads,) internal bus of each load
    load_mw: np.ndarray  # (loads,) nominal active load
    fixed_mw: np.ndarray  # (buses,) other fixed withdrawals: shunt conductance, minus sgens
    rate_mw: np.ndarray  # (lines,) DC flow limits (inf where the case has none)
    cost: np.ndarray  # (G, 3) polynomial cost c0 + c1 p + c2 p^2, p in MW
    pmin: np.ndarray  # (G,)
    pmax: np.ndarray  # (G,)
    base_mva: float
    gen_index: tuple[tuple[str, int], ...]  # ("ext_grid" | "gen", pandapower index)


_GRID_MODELS: dict[str, _GridModel] = {}
_OPF_NETS: dict[str, Any] = {}  # pandapower nets that _DispatchInstance._solve reuses


def _grid_model(case: str) -> _GridModel:
    """Build (once per case) the PTDF model of a pandapower case after ``rundcpp``.

    PTDF from ``pandapower.pypower.makePTDF`` on pandapower's internal case (slack bus
    as reference); limits from the internal branch ``RATE_A`` (MVA, 0 = none).
    """
    if case in _GRID_MODELS:
        return _GRID_MODELS[case]
    import warnings

    from icml26_core.datasets import load_power_grid

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandapower's FutureWarnings from pandas
        import pandapower as pp
        from pandapower.pypower.makePTDF import makePTDF

        net = load_power_grid(case)
        pp.rundcpp(net)
    ppc = net._ppc
    lookup = net._pd2ppc_lookups["bus"]
    base = float(ppc["baseMVA"])
    H = np.asarray(makePTDF(base, ppc["bus"], ppc["branch"]), dtype=np.float64)
    rate = np.asarray(ppc["branch"][:, 5].real, dtype=np.float64)
    rate = np.where(rate > 0, rate, np.inf)
    nb = ppc["bus"].shape[0]
    fixed = np.asarray(ppc["bus"][:, 4].real, dtype=np.float64).copy()  # GS, MW at 1 p.u.
    for _, sg in net.sgen[net.sgen.in_service].iterrows():
        fixed[lookup[int(sg.bus)]] -= float(sg.p_mw) * float(sg.scaling)
    loads = net.load[net.load.in_service]
    gens: list[tuple[str, int]] = [("ext_grid", int(i)) for i in net.ext_grid.index]
    gens += [("gen", int(i)) for i in net.gen.index[net.gen.in_service]]
    cost = np.zeros((len(gens), 3))
    pc = net.poly_cost
    for k, (et, idx) in enumerate(gens):
        row = pc[(pc.et == et) & (pc.element == idx)]
        if len(row) != 1:
            raise ValueError(f"case {case!r}: no single polynomial cost for {et} {idx}")
        r = row.iloc[0]
        cost[k] = (float(r.cp0_eur), float(r.cp1_eur_per_mw), float(r.cp2_eur_per_mw2))
    tab = {"ext_grid": net.ext_grid, "gen": net.gen}
    pmin = np.array([float(tab[et].at[i, "min_p_mw"]) for et, i in gens])
    pmax = np.array([float(tab[et].at[i, "max_p_mw"]) for et, i in gens])
    model = _GridModel(
        ptdf=H,
        gen_bus=np.array([lookup[int(tab[et].at[i, "bus"])] for et, i in gens]),
        load_bus=np.array([lookup[int(b)] for b in loads.bus]),
        load_mw=(loads.p_mw * loads.scaling).to_numpy(dtype=np.float64),
        fixed_mw=fixed,
        rate_mw=rate,
        cost=cost,
        pmin=pmin,
        pmax=pmax,
        base_mva=base,
        gen_index=tuple(gens),
    )
    assert H.shape == (len(rate), nb)
    _GRID_MODELS[case] = model
    return model


class _DispatchInstance(Problem):
    """DC economic dispatch of one load scenario: cost + penalty * violation (MW)."""

    def __init__(self, case: str, model: _GridModel, load_mw: np.ndarray) -> None:
        G = len(model.pmin)
        self.name, self.dim, self.case = "dispatch", G, case
        self.model = model
        self.load_mw = np.asarray(load_mw, dtype=np.float64)  # (loads,) this scenario
        nb = model.ptdf.shape[1]
        demand = model.fixed_mw.copy()
        np.add.at(demand, model.load_bus, self.load_mw)
        inc = np.zeros((G, nb))
        inc[np.arange(G), model.gen_bus] = 1.0
        self.total_demand = float(demand.sum())
        self._demand = torch.as_tensor(demand, dtype=torch.float64)  # (nb,)
        self._inc = torch.as_tensor(inc, dtype=torch.float64)  # (G, nb)
        self._ptdf = torch.as_tensor(model.ptdf, dtype=torch.float64)  # (nl, nb)
        self._rate = torch.as_tensor(np.where(np.isfinite(model.rate_mw), model.rate_mw, 1e12))
        self._cost = torch.as_tensor(model.cost, dtype=torch.float64)
        self._pmin = torch.as_tensor(model.pmin, dtype=torch.float64)
        self._pmax = torch.as_tensor(model.pmax, dtype=torch.float64)
        self.lower, self.upper = self._pmin, self._pmax
        # exact-penalty weight, fixed from the case: 10x the largest marginal cost in the box
        self.penalty = 10.0 * float((model.cost[:, 1] + 2 * model.cost[:, 2] * model.pmax).max())
        c = model.cost
        lo = model.pmin
        self.lower_bound = float((c[:, 0] + c[:, 1] * lo + c[:, 2] * lo**2).sum())
        self._optimum: float | None = None
        self._reference: np.ndarray | None = None

    def line_flows(self, X: torch.Tensor) -> torch.Tensor:
        """DC line flows (MW) ``(N, lines)`` of dispatches ``X`` ``(N, G)`` (MW)."""
        inj = X @ self._inc.to(X) - self._demand.to(X)
        return inj @ self._ptdf.to(X).T

    def cost(self, X: torch.Tensor) -> torch.Tensor:
        """Generation cost ``(N,)`` of dispatches ``X`` ``(N, G)`` in MW."""
        c = self._cost.to(X)
        return (c[:, 0] + c[:, 1] * X + c[:, 2] * X**2).sum(-1)

    def violation(self, X: torch.Tensor) -> torch.Tensor:
        """Constraint violation ``(N,)`` in MW: |balance| + line overloads + bound excess."""
        balance = (X.sum(-1) - self.total_demand).abs()
        over = torch.relu(self.line_flows(X).abs() - self._rate.to(X)).sum(-1)
        lo, hi = self._pmin.to(X), self._pmax.to(X)
        bounds = (torch.relu(lo - X) + torch.relu(X - hi)).sum(-1)
        return balance + over + bounds

    def f(self, X: torch.Tensor) -> torch.Tensor:
        return self.cost(X) + self.penalty * self.violation(X)

    def _solve(self) -> None:
        import warnings

        from icml26_core.datasets import load_power_grid

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pandapower as pp

            if self.case not in _OPF_NETS:  # one net per case, its loads reset per solve
                _OPF_NETS[self.case] = load_power_grid(self.case)
            net = _OPF_NETS[self.case]
            idx = net.load.index[net.load.in_service]
            net.load.loc[idx, "p_mw"] = self.load_mw / net.load.loc[idx, "scaling"].to_numpy()
            pp.rundcopp(net)
        if not net.OPF_converged:
            self._optimum, self._reference = float("nan"), None
            return
        self._optimum = float(net.res_cost)
        res = {"ext_grid": net.res_ext_grid, "gen": net.res_gen}
        self._reference = np.array([float(res[et].at[i, "p_mw"]) for et, i in self.model.gen_index])

    @property
    def optimum(self) -> float:  # type: ignore[override]
        """The DC OPF cost of pandapower's ``rundcopp`` for this scenario, solved lazily.

        For reporting only: training never reads it. NaN if the OPF does not converge.
        """
        if self._optimum is None:
            self._solve()
        assert self._optimum is not None
        return self._optimum

    @property
    def reference_dispatch(self) -> np.ndarray | None:
        """The DC OPF dispatch ``(G,)`` of ``rundcopp`` in MW (ext grids first), or None."""
        if self._optimum is None:
            self._solve()
        return self._reference


@dataclass(frozen=True)
class DCDispatch(ProblemFamily):
    """DC economic dispatch on a pandapower case: minimize cost, penalize violations.

    Variables: the active power of every generator (external grids first, then the
    ``gen`` table), MW, in the box ``[min_p_mw, max_p_mw]``. Objective: the case's
    polynomial cost ``sum c0 + c1 p + c2 p^2`` plus ``penalty * violation`` with
    ``violation = |sum p - demand| + sum_lines max(|flow| - rate, 0)`` (MW; flows from
    the PTDF of ``pandapower.pypower.makePTDF`` after ``rundcpp``, limits the case's
    ``RATE_A``) and ``penalty`` 10x the largest marginal cost in the box. An instance
    scales every load by a common factor U[0.85, 1.15] times its own U[0.9, 1.1].
    ``optimum`` is pandapower's ``rundcopp`` cost (reporting only).

    Args:
        case: A pandapower case of :func:`icml26_core.datasets.load_power_grid`
            (default ``"case30"``: 6 generators, 41 lines).

    Raises:
        ImportError: If pandapower is not installed (``pip install 'flow-optimizer[repro]'``).
    """

    case: str = "case30"
    name = "dispatch"

    @property
    def n_generators(self) -> int:
        """The instances' dimension (generators incl. external grids)."""
        return len(_grid_model(self.case).pmin)

    def sample_instance(self, rng: np.random.Generator, dim: int | None = None) -> Problem:
        """Draw a load scenario of the case.

        Args:
            rng: Numpy generator.
            dim: None, or the case's generator count (the dimension is the case's).

        Raises:
            ValueError: If ``dim`` is given and differs from the case's generator count.
            TypeError: If ``rng`` is not a ``np.random.Generator``.
        """
        rng = _check_rng(rng)
        model = _grid_model(self.case)
        if dim is not None and dim != len(model.pmin):
            raise ValueError(
                f"dim must be None or {len(model.pmin)} (the generators of {self.case}), got {dim}"
            )
        scale = rng.uniform(0.85, 1.15) * rng.uniform(0.9, 1.1, len(model.load_mw))
        return _DispatchInstance(self.case, model, model.load_mw * scale)


FAMILIES = {
    "rastrigin": Rastrigin,
    "ackley": Ackley,
    "rosenbrock": Rosenbrock,
    "levy": Levy,
    "arm-ik": ArmIK,
    "newsvendor": Newsvendor,
    "dispatch": DCDispatch,
}


def family(name: str) -> ProblemFamily:
    """The family called ``name`` (one of :data:`FAMILIES`).

    Raises:
        ValueError: If ``name`` is unknown.
    """
    if name not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {name!r}")
    return FAMILIES[name]()
