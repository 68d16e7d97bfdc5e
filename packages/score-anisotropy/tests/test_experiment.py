import numpy as np
import pytest
from icml26_core.testing import check_experiment
from score_anisotropy import experiment
from score_anisotropy.sad import dct_frequency


@pytest.mark.slow  # about 20 s of CPU (the first torch.func call alone is ~7 s)
def test_experiment_smoke(tmp_path):
    result = check_experiment("score-anisotropy", tmp_path)
    assert len(result.claims) == 4
    models = {row["model"] for row in result.tables[0].rows}
    assert {"MLP", "CNN", "ViT", "isotropic kernel (floor)"} <= models


def test_synthetic_sets_have_equal_spectra_on_low_and_high_modes():
    rng = np.random.default_rng(0)
    low = experiment.synthetic("low", 4000, rng)
    high = experiment.synthetic("high", 4000, rng)
    ev_low = np.sort(np.linalg.eigvalsh(np.cov(low, rowvar=False)))[::-1][: experiment.K_MODES]
    ev_high = np.sort(np.linalg.eigvalsh(np.cov(high, rowvar=False)))[::-1][: experiment.K_MODES]
    np.testing.assert_allclose(ev_low, ev_high, rtol=0.15)
    _, U_low = np.linalg.eigh(np.cov(low, rowvar=False))
    _, U_high = np.linalg.eigh(np.cov(high, rowvar=False))
    assert dct_frequency(U_low[:, -8:]).mean() < 2.5
    assert dct_frequency(U_high[:, -8:]).mean() > 11.5
