from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("rfo-flowpolicy", tmp_path)
    assert len(result.claims) == 3
    finals = result.data["final_returns"]
    assert set(finals) == {"pendulum", "cartpole_swingup", "halfcheetah", "hopper"}
    for task, by_method in finals.items():
        assert {"RFO", "Gaussian RPG", "SAC (sb3)"} <= set(by_method), task
    assert (tmp_path / "return_vs_steps.png").is_file()
