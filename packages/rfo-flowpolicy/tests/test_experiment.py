"""The experiment at smoke scale, and its verdicts from synthetic learning curves."""

import numpy as np
import pytest
from icml26_core.experiment import RunContext
from icml26_core.testing import check_experiment
from rfo_flowpolicy.experiment import summarize
from rfo_flowpolicy.tasks import ABLATIONS, EXACT, FLOOR, LEARNED


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("rfo-flowpolicy", tmp_path)
    assert len(result.claims) == 4  # the ablation runs at smoke scale
    finals = result.data["final_returns"]
    assert set(finals) == set(EXACT) | set(LEARNED)  # exact: sets of task names
    for task in (*EXACT, *LEARNED):
        assert {FLOOR, "RFO", "Gaussian RPG"} <= set(finals[task])
    assert {"SAC (sb3)", "PPO (sb3)", *ABLATIONS} <= set(finals["pendulum"])
    assert (tmp_path / "return_vs_steps.png").is_file()


def _curve(task, method, seed, final, steps=(200, 600, 1000)):
    return {
        "task": task,
        "method": method,
        "seed": seed,
        "total_steps": steps[-1],
        "env_steps": list(steps),
        "returns": [final - 300.0, final - 100.0, final],
        "model_steps": [0, 0, 7000],
        "updates": [0, 0, 160],
    }


def _synthetic(gaussian_on_pendulum=-600.0, sac_reach=3000):
    rng = np.random.default_rng(0)
    runs = []
    for task in (*EXACT, *LEARNED):
        runs.append(_curve(task, FLOOR, 0, -1000.0, steps=(0, 0, 0)))
        seeds = range(5 if task in EXACT else 3)
        for s in seeds:
            runs.append(_curve(task, "RFO", s, -200.0 + 5 * rng.normal()))
            g = gaussian_on_pendulum if task == "pendulum" else -600.0
            runs.append(_curve(task, "Gaussian RPG", s, g + 5 * rng.normal()))
            if task in ("pendulum", "cartpole_swingup"):
                for a in ABLATIONS:
                    runs.append(_curve(task, a, s, -400.0 + 5 * rng.normal()))
            if task in EXACT:
                # SAC reaches R* (about -200) at `sac_reach` steps; PPO never within its cap
                sac = _curve(
                    task,
                    "SAC (sb3)",
                    s,
                    -150.0,
                    steps=(sac_reach // 3, 2 * sac_reach // 3, sac_reach),
                )
                ppo = _curve(task, "PPO (sb3)", s, -900.0, steps=(2000, 6000, 10_000))
                runs += [sac, ppo]
    return runs


def test_summary_decides_the_claims_from_the_runs(tmp_path):
    result = summarize(RunContext("full", out_dir=tmp_path), _synthetic())
    gauss, ablation, efficiency, mujoco = result.claims
    assert gauss.verdict == "holds" and ablation.verdict == "holds"
    assert efficiency.verdict == "holds"
    # MuJoCo: 3 seeds per side is enough for Welch; the 5-seed paired floor test is not
    assert mujoco.verdict == "inconclusive"
    steps = result.data["steps_to_target"]["pendulum"]
    assert steps["SAC (sb3)"] == [3000.0] * 5  # exact: step counts; the first eval >= R*
    assert steps["PPO (sb3)"] == [10_000.0] * 5  # exact: step counts; never reached: the cap
    assert (tmp_path / "return_vs_steps.png").is_file()


def test_summary_default_scale_and_broken_claims(tmp_path, monkeypatch):
    monkeypatch.setattr("rfo_flowpolicy.experiment._figure", lambda ctx, runs: None)
    runs = _synthetic(gaussian_on_pendulum=-100.0, sac_reach=600)
    claims = summarize(RunContext("default", out_dir=tmp_path), runs).claims
    assert len(claims) == 3  # no regularizer ablation at default scale
    gauss, efficiency, _ = claims
    assert gauss.verdict == "does not hold"  # Gaussian RPG wins on pendulum
    assert efficiency.verdict == "does not hold"  # SAC reaches R* in 600 < 1000 steps
