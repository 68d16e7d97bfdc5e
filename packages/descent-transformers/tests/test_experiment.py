import numpy as np
import pytest
from descent_transformers import experiment
from icml26_core.testing import check_experiment


@pytest.mark.slow  # about 20 s of CPU on its own, more under load
def test_experiment_smoke(tmp_path):
    result = check_experiment("descent-transformers", tmp_path)
    assert len(result.claims) == 4
    names = {row["method"] for row in result.tables[0].rows}
    assert {"ERM", "deep supervision", "primal-dual (ours)", "floor: noisy input (no-op)"} <= names


def test_clips_stay_inside_their_frame_range():
    video = np.arange(20, dtype=np.float32)[:, None, None] * np.ones((20, 40, 40), np.float32)
    clips = experiment._clips(video, 50, np.random.default_rng(0), 10, 20)
    assert clips.shape == (50, experiment.FRAMES, experiment.SIZE, experiment.SIZE)
    assert clips.min() >= 10 and clips.max() <= 19
    # consecutive frames
    np.testing.assert_allclose(np.diff(clips[:, :, 0, 0], axis=1), 1.0)


def test_psnr():
    assert experiment._psnr(0.01) == pytest.approx(20.0)
