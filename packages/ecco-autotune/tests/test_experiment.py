import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow  # ~20 CPU-s; the checksum gate, determinism and operators are tested cheaply
def test_experiment_smoke(tmp_path, toolchain):
    result = check_experiment("ecco-autotune", tmp_path)
    assert len(result.claims) == 4
    # smoke has one program: the paired claims cannot be decided, and say so
    assert all(c.verdict == "inconclusive" for c in result.claims[:3])
    assert result.claims[-1].verdict == "holds"  # every reported sequence reproduces
    rows = result.tables[1].rows
    floor = [r for r in rows if r["method"] == "-O0 (floor)"]
    assert floor and all(r["cycles / O3"] >= 1.0 for r in floor)
    for r in rows:
        if r["method"] in ("random search", "GA", "ECCO"):
            assert r["cycles / O3"] <= 1.0 + 1e-9  # seeded with the -O3 pass list
            assert r["evaluations"] == 3


@pytest.mark.slow
def test_ecco_with_smollm2_chooses_intents(toolchain, evaluator):
    """The real strategist on a held-out program: intents come from the vocabulary."""
    from ecco_autotune import ECCO, INTENTS, Program, Strategist
    from icml26_core.lm import load_smollm2

    model, tok = load_smollm2()
    res = ECCO(Strategist(model, tok), population=3, consult_every=1, workers=2).tune(
        Program.builtin("md5", input_bytes=1024), 6, evaluator=evaluator
    )
    assert res.intents and all(i in INTENTS for i in res.intents)
