import math

import pytest
import torch
from foam_shampoo import experiment
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("foam-shampoo", tmp_path)
    assert len(result.claims) == 4
    names = {row["method"] for row in result.tables[0].rows}
    assert {"FOAM", "Shampoo f=1", "adaptive frequency only (ablation)", "floor: no step"} <= names


def test_train_counts_and_target_time():
    cfg = {"hidden": (8,), "steps": 6, "batch": 16, "eval_every": 2}
    data = experiment._data(4)
    assert data["Xtr"].shape == (4000, 49) and data["Xte"].shape == (1000, 49)
    make = experiment._methods()["Shampoo f=1"][1]
    r = experiment._train(make, 1e-3, 0, data, cfg)
    assert len(r["curve_loss"]) == 4 and r["eighs"] == 6 * 4
    assert r["final"] < r["init"] and not r["diverged"]
    assert experiment._time_to(r, r["init"]) == 0.0  # exact: the first curve point is t = 0
    assert experiment._time_to(r, -1.0) is None
    floor = experiment._train(None, 0.0, 0, data, cfg)
    assert floor["final"] == pytest.approx(floor["init"])
    assert floor["time"] == 0.0  # exact: no step is timed


def test_a_peer_that_raises_counts_as_diverged():
    class Broken(torch.optim.SGD):
        def step(self, closure=None):
            raise RuntimeError("linalg.svd: failed to converge")

    cfg = {"hidden": (8,), "steps": 4, "batch": 16, "eval_every": 2}
    r = experiment._train(lambda p, lr: Broken(p, lr=lr), 0.1, 0, experiment._data(4), cfg)
    assert r["diverged"] and math.isinf(r["final"])


def test_task_b_full_scale_is_the_issues_and_its_code_path_runs_at_toy_size(monkeypatch):
    # most of this test's ~20 s of CPU is importing transformers; the toy runs take ~2 s
    monkeypatch.setattr(experiment, "LM_LR_FACTORS", (1.0, 3.0))  # a 2-point grid: cheaper
    monkeypatch.setattr(experiment, "LM_LR_FACTORS_BY_METHOD", {})
    full = experiment._lm_config("full")
    assert full["size"] == "30M" and full["steps"] == 5000 and full["overrides"] == {}
    assert full["tune"] and full["tune_steps"] == 5000  # full scale: tuned, whole horizon
    default = experiment._lm_config("default")
    assert default["size"] == "1M" and default["steps"] == 200
    assert default["tune"] and default["tune_steps"] == 20  # shorter horizon (CPU budget)
    assert default["seeds"] == 2
    # the same code path (tuning included), with the model shrunk and 2 steps
    cfg = {**full, "overrides": experiment.TINY_LLAMA, "steps": 2, "batch": 2, "seq_len": 8}
    cfg.update(eval_every=1, eval_batches=1, seeds=1, tune_steps=1)
    lrs = dict.fromkeys(experiment.LM_METHODS, 1e-3)
    tables, data = experiment._run_lm(cfg, lrs, 0.1, 0.1, lambda it, desc: it)
    table, tune_table = tables
    names = [row["method"] for row in table.rows]
    assert names == [*experiment.LM_METHODS, "floor: no step"]
    assert len(tune_table.rows) == 2 * len(experiment.LM_METHODS) + 1  # + the floor
    assert tune_table.rows[-1]["method"] == "floor: no step"
    assert set(data["tuning"]) == set(experiment.LM_METHODS)
    assert all(lr in (1e-3, 3e-3) for lr in data["lr"].values())
    # 256 x 16 embedding, 4 attention and 3 MLP matrices: 8 matrices, 16 factors per step
    assert data["eighs"]["Shampoo f=1"] == [2 * 16]
    assert data["final"]["floor: no step"][0] > 0 and math.isfinite(data["final"]["FOAM"][0])


def test_sweep_picks_by_its_rule_on_validation_seeds():
    cfg = {"hidden": (8,), "steps": 6, "batch": 16, "eval_every": 2}
    tau, c, table, data = experiment._sweep(1e-3, experiment._data(4), cfg, lambda it, d: it)
    assert (tau, c) in {(t, cc) for t in experiment.SWEEP_TAUS for cc in experiment.SWEEP_CS}
    assert len(table.rows) == len(experiment.SWEEP_TAUS) * len(experiment.SWEEP_CS)
    assert [row["chosen"] for row in table.rows].count("yes") == 1
    rows = data["rows"]
    ok = {
        k: v
        for k, v in rows.items()
        if v["time"] is not None and v["final"] <= 1.02 * data["f=1 final"]
    }
    best = min(ok, key=lambda k: ok[k]["time"]) if ok else min(rows, key=lambda k: rows[k]["final"])
    assert best == f"tau={tau:g} c={c:g}"


def test_task_b_tuning_reads_only_the_validation_seed_and_half(monkeypatch):
    # the runs are faked (no model): each records its seed, steps and validation tokens
    calls = []
    # by lr: the tuning should pick 0.003, the middle of 0.1/0.3/1 x 0.01 (five methods) and
    # the lower edge of heavyball SOAP's 0.3/1/3 x 0.01
    val_loss = {0.001: 2.5, 0.003: 1.5, 0.01: 1.6, 0.03: 1.8}

    def fake_run(make, lr, seed, tokens, cfg, device="cpu"):
        calls.append(
            {"seed": seed, "steps": cfg["steps"], "val": tokens[1], "lr": lr, "make": make}
        )
        # the test seed's losses are 10 higher: they could not move a pick made on them
        final = 5.0 if make is None else val_loss.get(lr, 9.0) + (10.0 if seed != 100 else 0)
        return {"final": final, "init": 5.5, "curve_t": [0.0, 1.0], "curve_loss": [5.5, final]}

    def fake_full(make, lr, seed, tokens, cfg, device="cpu"):
        out = fake_run(make, lr, seed, tokens, cfg, device)
        return {**out, "time": 1.0, "cpu": 1.0, "eighs": None, "diverged": False}

    monkeypatch.setattr(experiment, "_train_lm_run", fake_full)
    cfg = {**experiment._lm_config("default"), "overrides": {}}
    lrs = dict.fromkeys(experiment.LM_METHODS, 0.01)
    tables, data = experiment._run_lm(cfg, lrs, 0.1, 0.1, lambda it, desc: it)
    tune = [c for c in calls if c["seed"] == experiment.VALIDATION_SEED]
    test = [c for c in calls if c["seed"] != experiment.VALIDATION_SEED]
    n_grid = sum(len(experiment._lm_factors(n)) for n in experiment.LM_METHODS)
    assert n_grid == 3 * len(experiment.LM_METHODS) + 1  # AdamW: one point past its old edge
    assert len(tune) == n_grid and calls[: len(tune)] == tune
    assert all(c["steps"] == 20 for c in tune) and all(c["steps"] == 200 for c in test)
    assert {c["seed"] for c in test} == {0, 1}
    # the tuning half and the test half of the validation split are disjoint and complete
    v_tune, v_test = tune[0]["val"], test[0]["val"]
    assert all(c["val"] is v_tune for c in tune) and all(c["val"] is v_test for c in test)
    assert abs(len(v_tune) - len(v_test)) <= 1 and v_tune.base is v_test.base is not None
    hb = "heavyball SOAP f=10"
    assert data["grids"][hb] == (0.003, 0.01, 0.03)
    assert data["grids"]["AdamW"] == (0.001, 0.003, 0.01, 0.03)
    assert all(
        data["grids"][n] == (0.001, 0.003, 0.01)
        for n in experiment.LM_METHODS
        if n not in (hb, "AdamW")
    )
    assert data["lr"] == dict.fromkeys(experiment.LM_METHODS, 0.003)
    assert data["at_grid_edge"] == {n: n == hb for n in experiment.LM_METHODS}
    assert {c["lr"] for c in test if c["make"] is not None} == {0.003}
    picked = [row for row in tables[1].rows if row["chosen"] == "yes"]
    assert [row["at grid edge"] for row in picked] == [
        "yes" if n == hb else "no" for n in experiment.LM_METHODS
    ]
    assert tables[1].rows[-1]["val loss (first half)"] == pytest.approx(5.5)  # the floor


def test_train_without_curve_reads_the_same_final_and_stops_at_a_non_finite_loss():
    cfg = {"hidden": (8,), "steps": 6, "batch": 16, "eval_every": 2}
    data = experiment._data(4)
    make = experiment._methods()["Shampoo f=10"][1]
    full = experiment._train(make, 1e-3, 0, data, cfg)
    short = experiment._train(make, 1e-3, 0, data, cfg, curve=False)
    assert len(short["curve_loss"]) == 2 and len(full["curve_loss"]) == 4
    assert short["final"] == pytest.approx(full["final"], rel=1e-6)  # same batches and steps

    class Poison(torch.optim.SGD):
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.data.fill_(float("nan"))

    r = experiment._train(lambda p, lr: Poison(p, lr=lr), 0.1, 0, data, cfg, curve=False)
    assert r["diverged"] and math.isinf(r["final"]) and len(r["curve_loss"]) == 2


def test_speed_claim_is_one_faster_claim_and_a_missed_target_counts_against_foam():
    f1 = [1.0, 1.1, 0.9, 1.2, 1.0, 0.95, 1.05]
    fast = [0.4 * t for t in f1]
    c = experiment._speed_claim(fast, f1, budget=2.0)
    assert c.verdict == "holds" and c.evidence is not None and c.evidence.n == 7
    assert c.evidence.effect == pytest.approx(2.5, rel=1e-9)  # median ratio of 1 / 0.4
    assert c.values["FOAM seeds reaching the target"] == "7/7"
    # five of seven seeds never reach the target: the median is a miss, FOAM is far slower
    missed = [None] * 5 + fast[5:]
    c = experiment._speed_claim(missed, f1, budget=2.0)
    assert c.verdict == "does not hold" and c.evidence.n == 7  # no pair dropped
    assert c.evidence.effect == pytest.approx(1.0 / 2000.0, rel=1e-9)  # 1 s / (1000 x 2 s)
    assert c.values["FOAM seeds reaching the target"] == "2/7" and "counts as" in c.rule
    # one miss: still one claim with its interval, not a separate "every seed" rule
    c = experiment._speed_claim([None, *fast[1:]], f1, budget=2.0)
    assert c.evidence is not None and c.evidence.n == 7 and c.verdict != "holds"
    with pytest.raises(ValueError, match="budget"):
        experiment._speed_claim(fast, f1, budget=0.0)
    with pytest.raises(ValueError, match="pair up"):
        experiment._speed_claim(fast[:3], f1, budget=1.0)


def _grid(final, diverged):
    """A fake frequency x damping grid: final(f, d, seed) and diverged(f, d, seed)."""
    return {
        (f, d): [{"final": final(f, d, s), "diverged": diverged(f, d, s)} for s in range(7)]
        for f in experiment.GRID_FREQUENCIES
        for d in experiment.GRID_DAMPINGS
    }


def test_staleness_claim_is_paired_and_cannot_decide_damping_without_divergences():
    grid = _grid(lambda f, d, s: 0.04 + 0.0004 * f + 0.001 * s, lambda f, d, s: False)
    c = experiment._staleness_claim(grid)
    hurt, damp = c.parts
    assert hurt.verdict == "holds" and hurt.evidence.n == 7  # f=50 above f=1 on all 7 seeds
    assert hurt.evidence.effect == pytest.approx(0.0004 * 49, rel=1e-9)
    assert damp.verdict == "inconclusive" and "no run diverged" in damp.rule
    assert damp.values["diverged at damping 1e-06"].startswith("0/21 [95% Wilson 0.00, 0.15")
    assert c.verdict == "inconclusive"
    # f=50 below f=1 on every seed: part 1 does not hold, and so neither does the claim
    c = experiment._staleness_claim(
        _grid(lambda f, d, s: 0.1 - 0.001 * f + 0.001 * s, lambda f, d, s: False)
    )
    assert c.parts[0].verdict == "does not hold" and c.verdict == "does not hold"


def test_staleness_claim_damping_part_reads_the_trend_of_divergences():
    def final(f, d, s):
        return 0.04 + 0.0004 * f + 0.001 * s

    # 15 of 21 runs diverge at 1e-6, 4 at 1e-4, none at 1e-2: the rate falls with damping
    def diverged(f, d, s):
        return (d == 1e-6 and s < 5) or (d == 1e-4 and s < 2 and f < 50)

    many = experiment._staleness_claim(_grid(final, diverged))
    damp = many.parts[1]
    assert damp.verdict == "holds" and damp.evidence.effect > 0 and damp.evidence.n == 63
    assert "no run diverged" not in damp.rule
    # the same count at every damping: no trend, not "holds"
    flat = experiment._staleness_claim(_grid(final, lambda f, d, s: s < 2))
    assert flat.parts[1].verdict != "holds"


def test_wilson_interval_matches_the_formula():
    lo, hi = experiment.wilson_interval(0, 21)
    z = 1.959963984540054
    assert lo == pytest.approx(0.0, abs=1e-12)
    assert hi == pytest.approx(z**2 / (21 + z**2), rel=1e-9)  # the k = 0 closed form
    lo, hi = experiment.wilson_interval(5, 20)
    p, n = 0.25, 20
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    assert (lo, hi) == pytest.approx((centre - half, centre + half), rel=1e-9)
    with pytest.raises(ValueError, match="k <= n"):
        experiment.wilson_interval(3, 2)
