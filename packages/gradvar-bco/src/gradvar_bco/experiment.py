"""The headline experiment of gradvar-bco: `icml26 run gradvar-bco`.

Four parts, each with its claim (thresholds as in issue 50, ours where the abstract
gives none):

1. Adaptivity: realizable online least squares on the diabetes rows, a sliding window
   of w rows sets the gradient variation V_T; ours vs two-point bandit gradient descent.
2. Dimension: f_t(x) = 1/2 ||A (x - c_t)||^2 with c_t on a slow random walk, d swept;
   the d-exponent of regret / sqrt(V_T + 1), ours vs the Chiang-style fixed tuning.
3. Strongly convex (lambda = 0.1): regret at T vs T/10 with the 1/(lambda t) step.
4. Portfolio selection on two real series (Ecdat Garch, Capm), loss -log <x, r_t>.

Every table has the trivial floor (play the domain's centre every round). Fixed step
sizes of the baselines and the scale of our adaptive step (``step_scale``, which sets
``c = (k G / s)^2``) are chosen on validation seeds the verdicts do not read, from
grids of the same size.
"""

from __future__ import annotations

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table

from gradvar_bco.domains import Ball, Box, Domain, Simplex
from gradvar_bco.ensemble import GradVarEnsemble
from gradvar_bco.learner import TwoPointOptimisticBCO
from gradvar_bco.onepoint import OnePointBoxLinear, OnePointGradientDescent
from gradvar_bco.protocol import run as play

VALIDATION_OFFSET = 10_000  # validation seeds: seed + this; verdicts read the others
# BGD's step as multiples of the theory step D / (G sqrt(k T))
BGD_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
# step_scale of ours: the first adaptive step as a multiple of D / (k G); same grid size
SCALE_GRID = (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


class _Const:
    """The trivial floor: always query the centre (both queries at x = c)."""

    def __init__(self, domain: Domain, n_runs: int) -> None:
        self.domain, self.n_runs = domain, n_runs
        self._x = np.broadcast_to(domain.center, (n_runs, domain.dim)).copy()

    def ask(self):
        return self._x, self._x

    def tell(self, f1, f2):
        return None

    @property
    def decision(self):
        return self._x


def _bgd(domain, delta, G, T, n_runs, seed, mult=1.0):
    """Two-point bandit gradient descent (Agarwal et al. 2010): no hint, fixed step."""
    eta = mult * domain.diameter / (G * np.sqrt(domain.direction_dim * T))
    return TwoPointOptimisticBCO(
        domain, delta, step_size=eta, optimistic=False, n_runs=n_runs, seed=seed
    )


def _tune(make_problem, build, grid, T, n_val, seed):
    """The grid value with the lowest mean regret on validation seeds.

    The whole grid runs at once: ``build(values, n_runs, seed)`` gets one grid value per
    run (run ``j * n_val + i`` is grid value j on validation run i), and the problem
    ``make_problem(seed + VALIDATION_OFFSET, n_runs)`` is drawn from seeds the verdicts
    never read.
    """
    k = len(grid)
    losses, u = make_problem(seed + VALIDATION_OFFSET, k * n_val)
    values = np.repeat(np.asarray(grid, dtype=np.float64), n_val)
    learner = build(values, k * n_val, seed + VALIDATION_OFFSET)
    regret = play(learner, losses, T, u).regret.reshape(k, n_val).mean(axis=1)
    return grid[int(np.argmin(regret))]


def _tuned_bgd_mult(make_problem, domain, delta, G, T, n_val, seed):
    """BGD's step multiple (of ``D / (G sqrt(k T))``), chosen on validation seeds."""
    base = domain.diameter / (G * np.sqrt(domain.direction_dim * T))

    def build(values, s, sd):
        return TwoPointOptimisticBCO(
            domain, delta, step_size=base * values, optimistic=False, n_runs=s, seed=sd
        )

    return _tune(make_problem, build, BGD_GRID, T, n_val, seed)


def _tuned_scale(make_problem, domain, delta, G, T, n_val, seed, strong_convexity=0.0):
    """Our ``step_scale`` (the adaptive step's constant), chosen on validation seeds."""

    def build(values, s, sd):
        return TwoPointOptimisticBCO(
            domain,
            delta,
            strong_convexity=strong_convexity,
            lipschitz=G,
            step_scale=values,
            n_runs=s,
            seed=sd,
        )

    return _tune(make_problem, build, SCALE_GRID, T, n_val, seed)


# ------------------------------------------------------------------ 1. adaptivity
def _window_hessians(X: np.ndarray, w: int, T: int) -> np.ndarray:
    """H_t = mean of a a^T over rows t..t+w-1 (cyclic), float64 (T, d, d)."""
    n, d = X.shape
    idx = np.arange(T + w) % n
    outer = X[idx, :, None] * X[idx, None, :]
    cs = np.concatenate([np.zeros((1, d, d)), np.cumsum(outer, axis=0)])
    return (cs[w : w + T] - cs[:T]) / w


def _adaptivity(ctx: RunContext, T: int, n: int, n_val: int, windows) -> tuple[list, dict]:
    from icml26_core.datasets import load_tabular

    X, _, _ = load_tabular("diabetes")
    X = (X - X.mean(0)) / X.std(0)
    d = X.shape[1]
    dom = Ball(d, 1.0)
    delta = 0.05
    rows, out = [], {}
    for w in ctx.progress(windows, "windows"):
        H = _window_hessians(X, w, T)
        dH = np.linalg.norm(np.diff(H, axis=0), ord=2, axis=(1, 2))
        opH = np.linalg.norm(H, ord=2, axis=(1, 2))

        def make(seed, s, H=H):
            r = np.random.default_rng(seed)
            xs = r.standard_normal((s, d))
            xs *= 0.5 / np.linalg.norm(xs, axis=1, keepdims=True)  # ||x*|| = 0.5

            def window_loss(t, x):
                z = x - xs
                return 0.5 * np.einsum("si,ij,sj->s", z, H[t], z)

            return window_loss, xs

        G = float(opH.max() * 1.5)  # ||H (x - x*)|| <= ||H|| (R + ||x*||)
        V = float(np.sum(dH**2) * 1.5**2)  # sup_x ||dH (x - x*)||^2 <= ||dH||^2 (R + ||x*||)^2
        mult = _tuned_bgd_mult(make, dom, delta, G, T, n_val, 0)
        scale = _tuned_scale(make, dom, delta, G, T, n_val, 0)
        losses, xs = make(0, n)
        ours = play(
            TwoPointOptimisticBCO(dom, delta, lipschitz=G, step_scale=scale, n_runs=n, seed=1),
            losses,
            T,
            xs,
        )
        bgd = play(_bgd(dom, delta, G, T, n, 1, mult), losses, T, xs)
        floor = play(_Const(dom, n), losses, T, xs)
        out[w] = {"V": V, "ours": ours.regret, "bgd": bgd.regret, "floor": floor.regret}
        for name, r in (
            (f"ours (adaptive, s={scale:g})", ours),
            (f"BGD two-point (x{mult:g})", bgd),
            ("centre (floor)", floor),
        ):
            rows.append(
                dict(
                    window=w,
                    V_T=V,
                    method=name,
                    regret=float(np.mean(r.regret)),
                    sd=float(np.std(r.regret, ddof=1)),
                    n=n,
                )
            )
    return rows, out


# ------------------------------------------------------------------- 2. dimension
def _quadratic_walk(seed: int, s: int, d: int, T: int, step: float):
    """f_t(x) = 1/2 ||A(x - c_t)||^2, c_t a reflected random walk in the 0.5-ball."""
    r = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(r.standard_normal((s, d, d)))
    A = Q * np.linspace(0.5, 1.0, d)[None, None, :]  # singular values in [0.5, 1]
    M = np.einsum("sji,sjk->sik", A, A)  # A^T A
    c = np.empty((T, s, d))
    cur = r.standard_normal((s, d))
    cur *= 0.3 / np.linalg.norm(cur, axis=1, keepdims=True)
    for t in range(T):
        cur = cur + step / np.sqrt(d) * r.standard_normal((s, d))
        nrm = np.linalg.norm(cur, axis=1, keepdims=True)
        cur = np.where(nrm > 0.5, cur * (0.5 / nrm), cur)
        c[t] = cur

    def losses(t, x):
        z = x - c[t]
        return 0.5 * np.einsum("si,sij,sj->s", z, M, z)

    dc = np.diff(c, axis=0)
    V = np.sum(np.sum(np.einsum("sij,tsj->tsi", M, dc) ** 2, axis=-1), axis=0)  # (s,)
    u = c.mean(axis=0)  # the best fixed point in hindsight (A fixed)
    return losses, u, V


def _chiang_step(domain: Domain, V: float, G: float) -> float:
    """The Chiang-style fixed step ``D / (k sqrt(V + G^2))`` for a variation budget V."""
    return domain.diameter / (domain.direction_dim * np.sqrt(V + G**2))


def _dimension(ctx: RunContext, T: int, n: int, n_val: int, dims) -> tuple[list, dict]:
    rows, out = [], {}
    for d in ctx.progress(dims, "dimensions"):
        dom = Ball(d, 1.0)
        losses, u, V = _quadratic_walk(7 + d, n, d, T, step=0.002)
        G = 1.5  # ||A^T A (x - c)|| <= 1 * 1.5

        def make(seed, s, d=d):
            return _quadratic_walk(7 + d + seed, s, d, T, step=0.002)[:2]

        scale = _tuned_scale(make, dom, 0.05, G, T, n_val, 0)
        ours = play(
            TwoPointOptimisticBCO(dom, 0.05, lipschitz=G, step_scale=scale, n_runs=n, seed=2),
            losses,
            T,
            u,
        )

        # Chiang tuning with the oracle variation budget (the mean V_T of the runs it
        # plays), times a multiple chosen on validation seeds from a grid of the same size.
        val_V = float(_quadratic_walk(7 + d + VALIDATION_OFFSET, 1, d, T, step=0.002)[2][0])
        val_step = _chiang_step(dom, val_V, G)

        def build_chiang(values, s, sd, dom=dom, step=val_step):
            return TwoPointOptimisticBCO(
                dom, 0.05, step_size=values * step, optimistic=True, n_runs=s, seed=sd
            )

        mult = _tune(make, build_chiang, SCALE_GRID, T, n_val, 0)
        ch = TwoPointOptimisticBCO(
            dom, 0.05, step_size=mult * _chiang_step(dom, float(V.mean()), G), n_runs=n, seed=2
        )
        chiang = play(ch, losses, T, u)
        floor = play(_Const(dom, n), losses, T, u)
        out[d] = {"V": V, "ours": ours.regret, "chiang": chiang.regret, "floor": floor.regret}
        for name, r in (
            (f"ours (adaptive, s={scale:g})", ours),
            (f"Chiang tuning (x{mult:g})", chiang),
            ("centre (floor)", floor),
        ):
            norm = r.regret / np.sqrt(V + 1.0)
            rows.append(
                dict(
                    d=d,
                    V_T=float(V.mean()),
                    method=name,
                    regret=float(r.regret.mean()),
                    regret_over_sqrtV=float(norm.mean()),
                    n=n,
                )
            )
    return rows, out


# -------------------------------------------------------------- 3. strongly convex
def _strongly_convex(ctx: RunContext, Ts, n: int, n_val: int, d: int = 10, lam: float = 0.1):
    dom = Ball(d, 1.0)
    G = 1.5 * lam / 0.25
    rows, out = [], {}

    def make_at(T):
        def make(seed, s):
            f0, u, _ = _quadratic_walk(99 + seed, s, d, T, step=0.001)

            def losses(t, x):
                return lam * f0(t, x) / 0.25  # A^T A >= 0.25 I, so f_t is lam-strongly convex

            return losses, u

        return make

    # One scale per step rule, chosen at the shortest horizon on validation seeds and
    # kept for every horizon (the claim compares horizons).
    s_sc = _tuned_scale(make_at(min(Ts)), dom, 0.05, G, min(Ts), n_val, 0, strong_convexity=lam)
    s_ad = _tuned_scale(make_at(min(Ts)), dom, 0.05, G, min(Ts), n_val, 0)
    for T in ctx.progress(Ts, "horizons"):
        losses, u = make_at(T)(0, n)
        sc = play(
            TwoPointOptimisticBCO(
                dom, 0.05, strong_convexity=lam, lipschitz=G, step_scale=s_sc, n_runs=n, seed=3
            ),
            losses,
            T,
            u,
        )
        ad = play(
            TwoPointOptimisticBCO(dom, 0.05, lipschitz=G, step_scale=s_ad, n_runs=n, seed=3),
            losses,
            T,
            u,
        )
        floor = play(_Const(dom, n), losses, T, u)
        out[T] = {"sc": sc.regret, "adaptive": ad.regret, "floor": floor.regret}
        for name, r in (
            (f"ours, 1/(lambda t) (s={s_sc:g})", sc),
            (f"ours, adaptive, no lambda (s={s_ad:g})", ad),
            ("centre (floor)", floor),
        ):
            rows.append(
                dict(
                    T=T,
                    method=name,
                    regret=float(r.regret.mean()),
                    sd=float(r.regret.std(ddof=1)),
                    n=n,
                )
            )
    return rows, out


# --------------------------------------------------------------------- 5. dynamic
def _dynamic(ctx: RunContext, T: int, n: int, d: int = 10, segments: int = 10):
    """Dynamic regret on piecewise-constant c_t (new point every T / segments rounds)."""
    r = np.random.default_rng(2024)
    Q, _ = np.linalg.qr(r.standard_normal((n, d, d)))
    A = Q * np.linspace(0.5, 1.0, d)[None, None, :]
    M = np.einsum("sji,sjk->sik", A, A)
    pts = r.standard_normal((segments, n, d))
    pts *= (0.5 * r.uniform(0.3, 1.0, (segments, n, 1))) / np.linalg.norm(
        pts, axis=2, keepdims=True
    )
    seg = np.minimum(np.arange(T) * segments // T, segments - 1)
    path_length = np.sum(np.linalg.norm(np.diff(pts, axis=0), axis=2), axis=0)  # (n,)

    def losses(t, x):
        z = x - pts[seg[t]]
        return 0.5 * np.einsum("si,sij,sj->s", z, M, z)

    def path(t):
        return pts[seg[t]]

    dom, delta, G = Ball(d, 1.0), 0.05, 1.5
    eta_min = dom.diameter / (d * G * np.sqrt(T))
    n_bases = 1 + int(np.ceil(0.5 * np.log2(T))) + 2
    ens = play(
        GradVarEnsemble(dom, delta, n_bases, eta_min, n_runs=n, seed=5),
        losses,
        T,
        comparator_path=path,
    )
    plain = play(
        GradVarEnsemble(dom, delta, n_bases, eta_min, optimistic=False, n_runs=n, seed=5),
        losses,
        T,
        comparator_path=path,
    )
    single = play(
        TwoPointOptimisticBCO(dom, delta, lipschitz=G, n_runs=n, seed=5),
        losses,
        T,
        comparator_path=path,
    )
    floor = play(_Const(dom, n), losses, T, comparator_path=path)
    rows = []
    for name, res in (
        ("ours: optimistic ensemble", ens),
        ("two-point ensemble, no optimism", plain),
        ("ours: single adaptive learner", single),
        ("centre (floor)", floor),
    ):
        rows.append(
            dict(
                T=T,
                P_T=float(path_length.mean()),
                method=name,
                dynamic_regret=float(res.regret.mean()),
                sd=float(res.regret.std(ddof=1)),
                n=n,
            )
        )
    return rows, {"ours": ens.regret, "plain": plain.regret}


# ------------------------------------------------------------------ 6. one-point linear
DELTA_GRID = (0.1, 0.3, 0.6)  # BGD one-point's exploration radius (box [-1, 1]^d)
BASELINE_GRID = (0.0, 0.01, 0.1)  # the running-mean baseline's rate, for every learner


def _linear_walk(seed: int, s: int, d: int, T: int, sigma: float) -> np.ndarray:
    """Loss vectors l_t on a random walk of step sigma per coordinate, clipped to [-1, 1]^d.

    Returns float64 (T, s, d): ``l_0`` uniform on the cube, one walk per run.
    """
    r = np.random.default_rng(seed)
    l0 = r.uniform(-1.0, 1.0, (s, d))
    return np.clip(l0 + np.cumsum(r.normal(0.0, sigma, (T, s, d)), axis=0), -1.0, 1.0)


def _play_one_point(learner, ls: np.ndarray) -> np.ndarray:
    """Static regret per run of a one-point learner on linear losses ``ls`` (T, s, d).

    Regret = sum_t <l_t, x_t> at the points played minus ``min_x sum_t <l_t, x>``,
    which on [-1, 1]^d is ``-||sum_t l_t||_1``.
    """
    total = np.zeros(ls.shape[1])
    for lt in ls:
        y = np.sum(lt * learner.ask(), axis=-1)
        learner.tell(y)
        total += y
    return total + np.abs(ls.sum(axis=0)).sum(axis=-1)


def _bgd_eta(box: Box, mult, delta, T: int):
    """BGD one-point's step: ``mult`` times OGD's ``D / (G sqrt(T))`` with ``G = d^2 / delta``."""
    return mult * box.diameter * delta / (box.dim**2 * np.sqrt(T))


def _tune_one_point(ctx: RunContext, build, grid, T: int, n_val: int, d: int, sigma: float):
    """The grid value with the lowest mean regret on validation walks (one call for all)."""
    k = len(grid)
    ls = _linear_walk(ctx.seed + VALIDATION_OFFSET, k * n_val, d, T, sigma)
    idx = np.repeat(np.arange(k), n_val)
    reg = _play_one_point(build(idx, k * n_val, ctx.seed + VALIDATION_OFFSET), ls)
    return grid[int(np.argmin(reg.reshape(k, n_val).mean(axis=1)))]


def _one_point_at(ctx: RunContext, T: int, n: int, n_val: int, d: int, sigma: float):
    """One-point linear losses on [-1, 1]^d: ours (tracking hint), SCRiBLe, BGD one-point.

    Every method's constants are chosen on validation walks (seed + VALIDATION_OFFSET):
    the step scale of ours and of SCRiBLe from ``SCALE_GRID``, BGD's step (multiples
    ``BGD_GRID`` of ``D delta / (d^2 sqrt(T))``, its OGD step for ``|g| <= d^2 / delta``)
    and delta (``DELTA_GRID``); every learner also gets the running-mean baseline with
    its rate from ``BASELINE_GRID``: 81 settings for BGD, 27 for ours and for SCRiBLe.
    """
    box = Box(-1.0, 1.0, dim=d)
    ours_grid = [(sc, br) for br in BASELINE_GRID for sc in SCALE_GRID]
    scales, rates = (np.array([p[j] for p in ours_grid]) for j in (0, 1))

    def ours(scale, rate, s, sd, hint):
        return OnePointBoxLinear(
            -1.0, 1.0, dim=d, step_scale=scale, baseline_rate=rate, hint=hint, n_runs=s, seed=sd
        )

    chosen = {
        hint: _tune_one_point(
            ctx,
            lambda i, s, sd, h=hint: ours(scales[i], rates[i], s, sd, h),
            ours_grid,
            T,
            n_val,
            d,
            sigma,
        )
        for hint in ("tracking", "none")
    }
    pairs = [(m, dl, br) for br in BASELINE_GRID for dl in DELTA_GRID for m in BGD_GRID]
    mults, deltas, brs = (np.array([p[j] for p in pairs]) for j in (0, 1, 2))

    def bgd(i, s, sd):
        eta = _bgd_eta(box, mults[i], deltas[i], T)
        return _MixedDeltaBGD(box, deltas[i], eta, brs[i], s, sd)

    mult, delta, rate = _tune_one_point(ctx, bgd, pairs, T, n_val, d, sigma)
    ls = _linear_walk(ctx.seed, n, d, T, sigma)
    baseline = OnePointGradientDescent(
        box, delta, _bgd_eta(box, mult, delta, T), baseline_rate=rate, n_runs=n, seed=ctx.seed
    )
    res = {
        "ours": _play_one_point(ours(*chosen["tracking"], n, ctx.seed, "tracking"), ls),
        "scrible": _play_one_point(ours(*chosen["none"], n, ctx.seed, "none"), ls),
        "bgd": _play_one_point(baseline, ls),
        "floor": np.abs(ls.sum(axis=0)).sum(axis=-1),  # play the centre x = 0
    }
    names = {
        "ours": "ours: SCRiBLe + tracking hint (s={:g}, rho={:g})".format(*chosen["tracking"]),
        "scrible": "SCRiBLe, no hint (s={:g}, rho={:g})".format(*chosen["none"]),
        "bgd": f"BGD one-point (x{mult:g}, delta={delta:g}, rho={rate:g})",
        "floor": "centre (floor)",
    }
    rows = [
        dict(
            sigma=sigma,
            d=d,
            T=T,
            method=name,
            regret=float(res[key].mean()),
            sd=float(res[key].std(ddof=1)),
            n=n,
        )
        for key, name in names.items()
    ]
    return rows, res


class _MixedDeltaBGD:
    """BGD one-point runs with one delta per run (the tuning grid in one call)."""

    def __init__(self, box: Box, delta, eta, rate, s: int, seed: int):
        self.groups = [
            (
                np.flatnonzero(delta == dl),
                OnePointGradientDescent(
                    box,
                    float(dl),
                    eta[delta == dl],
                    baseline_rate=rate[delta == dl],
                    n_runs=int(np.sum(delta == dl)),
                    seed=seed,
                ),
            )
            for dl in np.unique(delta)
        ]
        self.x = np.zeros((s, box.dim))

    def ask(self):
        for idx, g in self.groups:
            self.x[idx] = g.ask()
        return self.x

    def tell(self, value):
        for idx, g in self.groups:
            g.tell(value[idx])


# ------------------------------------------------------------------- 4. portfolio
class _FullInfoOptimisticOGD:
    """Full-information optimistic OGD (the lower reference): sees grad f_t(x_t)."""

    def __init__(self, domain: Domain, grad, lipschitz: float) -> None:
        self.domain, self.grad = domain, grad
        self.xhat = domain.center.copy()
        self.m = np.zeros(domain.dim)
        self.S, self.c = 0.0, (2 * lipschitz) ** 2

    def play(self, T: int, loss) -> np.ndarray:
        out = np.empty(T)
        for t in range(T):
            eta = self.domain.diameter / np.sqrt(self.c + self.S)
            x = self.domain.project(self.xhat - eta * self.m)
            out[t] = loss(t, x[None])[0]
            g = self.grad(t, x)
            self.S += float(np.sum((g - self.m) ** 2))
            self.xhat = self.domain.project(self.xhat - eta * g)
            self.m = g
        return out


def _portfolio(ctx: RunContext, n: int, n_val: int):
    from icml26_core.datasets import load_series

    rows, out = [], {}
    for name in ctx.progress(("garch", "capm"), "series"):
        s = load_series(name)
        if name == "garch":
            R = s.values[1:] / s.values[:-1]
        else:
            v = s.values
            rf = v[:, 4]
            R = np.column_stack([1 + (v[:, :4] + rf[:, None]) / 100.0, 1 + rf / 100.0])
        T, d = R.shape
        dom = Simplex(d)
        delta = 0.5 * dom.inner_radius
        G = float(np.max(np.linalg.norm(R, axis=1) / R.min(axis=1)))

        def losses(t, x, R=R):
            return -np.log(x @ R[t])

        def grad(t, x, R=R):
            return -R[t] / (x @ R[t])

        def make(seed, k, losses=losses):
            return losses, None

        mult = _tuned_bgd_mult(make, dom, delta, G, T, n_val, 0)
        scale = _tuned_scale(make, dom, delta, G, T, n_val, 0)
        ours = play(
            TwoPointOptimisticBCO(dom, delta, lipschitz=G, step_scale=scale, n_runs=n, seed=4),
            losses,
            T,
        )
        bgd = play(_bgd(dom, delta, G, T, n, 4, mult), losses, T)
        floor = play(_Const(dom, n), losses, T)
        full = _FullInfoOptimisticOGD(dom, grad, G).play(T, losses)
        wealth = {
            f"ours (adaptive, two-point, s={scale:g})": -ours.losses.sum(1),
            f"BGD two-point (x{mult:g})": -bgd.losses.sum(1),
            "uniform (floor)": -floor.losses.sum(1),
            "optimistic OGD (full information)": np.full(n, -full.sum()),
        }
        out[name] = {
            "ours": -ours.losses.sum(1),
            "bgd": -bgd.losses.sum(1),
            "full": float(-full.sum()),
        }
        for m, lw in wealth.items():
            rows.append(
                dict(
                    series=name,
                    T=T,
                    method=m,
                    log_wealth=float(lw.mean()),
                    sd=float(lw.std(ddof=1)) if n > 1 else 0.0,
                    n=n,
                )
            )
    return rows, out


def run(ctx: RunContext) -> Result:
    """Measure the four parts at ``ctx.scale`` and decide the claims with the core's builders."""
    n = ctx.pick(smoke=5, default=10, full=50)
    n_val = ctx.pick(smoke=2, default=3, full=10)
    T = ctx.pick(smoke=300, default=10_000, full=1_000_000)
    windows = (1, 10, 100, 1000)
    dims = ctx.pick(
        smoke=(5, 10, 20), default=(5, 10, 20, 40, 80), full=(5, 10, 20, 40, 80, 160, 320)
    )
    tables, claims = [], []

    # 1. adaptivity
    rows, a = _adaptivity(ctx, T, n, n_val, windows)
    t1 = Table("1. windowed least squares (diabetes): regret per method", list(rows[0]))
    for r in rows:
        t1.add_row(**r)
    tables.append(t1)
    xs = np.concatenate([np.full(n, a[w]["V"]) for w in windows])
    ys = np.concatenate([a[w]["ours"] for w in windows])
    slope = Claim.slope(
        "Our regret adapts to the gradient variation: it grows at most like V_T^0.6 "
        "across windows.",
        xs,
        np.maximum(ys, 1e-12),
        expected=0.6,
        tol=0.0,
        alternative="less",
        metric="regret vs V_T",
    )
    small = [w for w in windows if a[w]["V"] <= T / 100]
    if small:
        parts = [
            Claim.superior(
                f"Window {w} (V_T = {a[w]['V']:.3g} <= T/100): ours / BGD two-point <= 0.7.",
                a[w]["ours"],
                a[w]["bgd"],
                names=("ours", "BGD"),
                metric="regret",
                higher_is_better=False,
                log_ratio=True,
                min_effect=1 / 0.7,
            )
            for w in small
        ]
        ratio = Claim.all_of("Where V_T <= T/100, our regret is <= 0.7 x BGD two-point's.", parts)
    else:
        ratio = Claim.check(
            "Where V_T <= T/100, our regret is <= 0.7 x BGD two-point's.",
            "needs a window with V_T <= T/100",
            {"smallest V_T": min(a[w]["V"] for w in windows)},
            lambda v: None,
        )
    claims.append(
        Claim.all_of(
            "Adaptivity: regret scales with V_T and beats BGD where V_T is small.", [slope, ratio]
        )
    )

    # 2. dimension
    rows, b = _dimension(ctx, T, n, n_val, dims)
    t2 = Table("2. quadratic random walk: regret / sqrt(V_T + 1) against d", list(rows[0]))
    for r in rows:
        t2.add_row(**r)
    tables.append(t2)
    logd = np.log(np.asarray(dims, dtype=float))

    def per_seed_slope(key):
        """Per-seed least-squares slope of log(regret / sqrt(V_T + 1)) on log d, (n,)."""
        y = np.log(np.stack([b[d][key] / np.sqrt(b[d]["V"] + 1) for d in dims]))  # (nd, n)
        return np.polyfit(logd, y, 1)[0]

    statement = (
        "Dimension: the d-exponent of regret / sqrt(V_T + 1) is lower for ours than for "
        "the Chiang tuning by >= 0.3."
    )
    n_nonpos = int(sum(np.sum(b[d][k] <= 0) for d in dims for k in ("ours", "chiang")))
    if n_nonpos:
        # A log-log exponent of a regret that is <= 0 is undefined: the data cannot tell.
        claims.append(
            Claim.check(
                statement,
                "per-seed fitted d-exponent of regret / sqrt(V_T + 1), needs every regret > 0; "
                "inconclusive when some regret <= 0 (the learners beat the best fixed point)",
                {
                    "runs with regret <= 0": n_nonpos,
                    "runs": 2 * n * len(dims),
                    "max |ours - Chiang| / |Chiang| (mean regret over d)": float(
                        max(
                            abs(b[d]["ours"].mean() - b[d]["chiang"].mean())
                            / abs(b[d]["chiang"].mean())
                            for d in dims
                        )
                    ),
                },
                lambda v: None,
            )
        )
    else:
        claims.append(
            Claim.superior(
                statement,
                per_seed_slope("chiang"),
                per_seed_slope("ours"),
                names=("Chiang exponent", "our exponent"),
                metric="fitted d-exponent (per seed)",
                higher_is_better=True,
                min_effect=0.3,
            )
        )
    # 3. strongly convex
    Ts = (T // 10, T)
    rows, c = _strongly_convex(ctx, Ts, n, n_val)
    t3 = Table("3. strongly convex (lambda = 0.1) quadratic walk, d = 10", list(rows[0]))
    for r in rows:
        t3.add_row(**r)
    tables.append(t3)
    claims.append(
        Claim.superior(
            f"Strongly convex: regret(T = {T}) <= 2 x regret(T = {T // 10}) "
            "with the 1/(lambda t) step.",
            c[T]["sc"],
            2.0 * c[T // 10]["sc"],
            names=(f"regret(T={T})", f"2 regret(T={T // 10})"),
            metric="regret",
            higher_is_better=False,
            log_ratio=True,
        )
    )
    # 5. dynamic (listed before the portfolio in the tables: part 4 of issue 50)
    rows, e = _dynamic(ctx, T, n)
    t5 = Table("5. dynamic regret, piecewise-constant c_t (10 segments), d = 10", list(rows[0]))
    for r in rows:
        t5.add_row(**r)
    claims.append(
        Claim.superior(
            "Dynamic: the optimistic ensemble's dynamic regret is <= 0.8 x that of the same "
            "two-point ensemble without optimism.",
            e["ours"],
            e["plain"],
            names=("optimistic ensemble", "no optimism"),
            metric="dynamic regret",
            higher_is_better=False,
            log_ratio=True,
            min_effect=1 / 0.8,
        )
    )
    # 4. portfolio
    rows, p = _portfolio(ctx, n, n_val)
    t4 = Table("4. online portfolio selection: log wealth (higher is better)", list(rows[0]))
    for r in rows:
        t4.add_row(**r)
    tables.append(t4)
    tables.append(t5)
    parts = [
        Claim.non_inferior(
            f"{s}: our log wealth >= BGD two-point's (margin 0.01).",
            p[s]["ours"],
            p[s]["bgd"],
            margin=0.01,
            names=("ours", "BGD"),
            metric="log wealth",
        )
        for s in ("garch", "capm")
    ]
    claims.append(
        Claim.all_of("Portfolio: our log wealth is >= BGD two-point's on both series.", parts)
    )
    # 6. one-point linear losses
    T1 = ctx.pick(smoke=300, default=10_000, full=100_000)
    slow, fast = 1e-3, 0.1
    rows, q = [], {}
    for sigma in (slow, fast):
        r, q[sigma] = _one_point_at(ctx, T1, n, n_val, 5, sigma)
        rows += r
    t6 = Table(
        "6. one-point linear losses on [-1, 1]^5, l_t a clipped random walk of step sigma",
        list(rows[0]),
    )
    for r in rows:
        t6.add_row(**r)
    tables.append(t6)
    claims.append(
        Claim.superior(
            f"One-point: when l_t varies slowly (sigma = {slow:g}), our regret is below "
            "BGD one-point's.",
            q[slow]["ours"],
            q[slow]["bgd"],
            names=("ours", "BGD one-point"),
            metric="regret",
            higher_is_better=False,
        )
    )
    claims.append(
        Claim.superior(
            f"One-point, the hint's share: at sigma = {slow:g} the tracking hint lowers "
            "SCRiBLe's regret by >= 10%.",
            q[slow]["ours"],
            q[slow]["scrible"],
            names=("with hint", "no hint"),
            metric="regret",
            higher_is_better=False,
            log_ratio=True,
            min_effect=1.1,
        )
    )
    gap = {s: float(p[s]["full"] - np.mean(p[s]["ours"])) for s in ("garch", "capm")}
    notes = [
        f"{s}: log wealth of full-information optimistic OGD minus ours (two-point): {g:+.4f}."
        for s, g in gap.items()
    ]
    return Result(tables=tables, claims=claims, notes=notes, data={"full_info_gap": gap})


EXPERIMENT = Experiment(
    name="gradvar-bco",
    title="Gradient-variation regret for two-point bandit convex optimization",
    claim=(
        "Optimistic two-point BCO with an adaptive step has regret that scales with the "
        "gradient variation V_T and a milder dimension dependence than a fixed Chiang-style tuning."
    ),
    run=run,
)
