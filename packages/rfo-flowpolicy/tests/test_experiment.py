from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("rfo-flowpolicy", tmp_path)
    assert len(result.claims) == 3
    finals = result.data["final_returns"]
    assert set(finals) == {"pendulum", "cartpole_swingup", "halfcheetah", "hopper"}
    for task, by_method in finals.items():
        assert {"RFO", "Gaussian RPG", "SAC (sb3)"} <= set(by_method), task
    assert (tmp_path / "return_vs_steps.png").is_file()


def test_summary_decides_claims_from_curves(tmp_path):
    from icml26_core.experiment import RunContext
    from rfo_flowpolicy.experiment import summarize
    from rfo_flowpolicy.tasks import METHODS, TASKS

    curves = {  # final returns: RFO 10, Gaussian 5, SAC reaches 10 only at the end
        "RFO": [0.0, 10.0, 10.0],
        "Gaussian RPG": [0.0, 2.0, 5.0],
        "SAC (sb3)": [0.0, 1.0, 10.0],
        "RFO w/o stability": [0.0, 1.0, 12.0],
        "RFO w/o exploration": [0.0, 1.0, 3.0],
        "RFO chunk=2": [0.0, 1.0, 3.0],
    }
    runs = [
        {
            "task": t,
            "method": m,
            "seed": 0,
            "env_steps": [100, 200, 300],
            "returns": curves[m],
            "model_steps": [0, 0, 7],
        }
        for t in TASKS
        for m in METHODS
    ]
    result = summarize(RunContext("smoke", out_dir=tmp_path), runs)
    rfo_gauss, ablation, efficiency = result.claims
    assert rfo_gauss.holds and not ablation.holds and efficiency.holds
    assert efficiency.values["ratio (pendulum)"] == 1.5  # SAC needs 300 steps, RFO 200
    assert ablation.values["RFO - RFO w/o stability (pendulum)"] == -2.0
