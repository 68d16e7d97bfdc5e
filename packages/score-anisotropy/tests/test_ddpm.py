import numpy as np
import pytest
import score_anisotropy as sa
import torch
from scipy.stats import wasserstein_distance


def test_w2_exact_equals_the_sorted_formula_in_1d():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((50, 1)), 2 + 0.5 * rng.standard_normal((50, 1))
    expected = np.sqrt(np.mean((np.sort(a[:, 0]) - np.sort(b[:, 0])) ** 2))
    assert sa.w2_exact(a, b) == pytest.approx(expected, rel=1e-10)
    assert sa.w2_exact(a, a[::-1]) == pytest.approx(0.0, abs=1e-7)


def test_w2_exact_of_a_translation_is_its_length():
    A = np.random.default_rng(1).standard_normal((40, 3))
    shift = np.array([1.0, -2.0, 2.0])
    assert sa.w2_exact(A, A + shift) == pytest.approx(3.0, rel=1e-9)


def test_per_direction_w1_and_sliced_w2_match_1d_references():
    rng = np.random.default_rng(2)
    G, T = rng.standard_normal((60, 4)), rng.standard_normal((80, 4)) + 1.0
    U = np.eye(4)[:, :2]
    w1 = sa.per_direction_wasserstein(G, T, U)
    for j in range(2):
        assert w1[j] == pytest.approx(wasserstein_distance(G[:, j], T[:, j]), rel=1e-12)
    A, B = rng.standard_normal((100, 2)), rng.standard_normal((100, 2)) + 3.0
    assert sa.sliced_w2(A, B, np.eye(2)) == pytest.approx(
        np.sqrt(np.mean([(np.sort(A[:, j]) - np.sort(B[:, j])) ** 2 for j in range(2)])), rel=1e-9
    )


def test_schedule_ends_near_pure_noise():
    for T in (20, 50, 200):
        sch = sa.DDPMSchedule(T)
        assert float(sch.alphas_bar[-1]) < 1e-3
        assert float(sch.betas.max()) < 0.5 or T < 50
    sch = sa.DDPMSchedule(100, kind="cosine")
    assert float(sch.alphas_bar[-1]) < 1e-3


def test_ddpm_recovers_a_2d_gaussian_covariance_within_10_percent():
    # the covariance test at a size for the fast suite (about 2 s of CPU); the
    # 4-D version below is slow
    torch.manual_seed(0)
    L = np.array([[1.0, 0.0], [0.8, 0.6]])
    X = np.random.default_rng(0).standard_normal((2000, 2)) @ L.T
    m = sa.ScoreMLP(2, width=64)
    sch = sa.DDPMSchedule(200)
    losses = sa.train_ddpm(m, X, 800, sch, batch_size=256, lr=2e-3, seed=0)
    assert np.mean(losses[-100:]) < np.mean(losses[:20])
    S = np.cov(sa.sample_ddpm(m, 4000, sch, seed=1), rowvar=False)
    C = L @ L.T
    assert np.linalg.norm(S - C) / np.linalg.norm(C) < 0.10


@pytest.mark.slow  # about 10 s of CPU
def test_ddpm_recovers_a_gaussian_covariance():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    L = np.array(
        [[1.0, 0.0, 0.0, 0.0], [0.8, 0.6, 0.0, 0.0], [0.0, 0.0, 0.5, 0.0], [0.0, 0.0, 0.3, 1.2]]
    )
    X = rng.standard_normal((4000, 4)) @ L.T
    m = sa.ScoreMLP(4, width=64)
    sch = sa.DDPMSchedule(200)  # at T = 50 the samples are ~15% under-dispersed
    losses = sa.train_ddpm(m, X, 1500, sch, batch_size=256, lr=2e-3, seed=0)
    assert np.mean(losses[-100:]) < np.mean(losses[:20])
    S = np.cov(sa.sample_ddpm(m, 4000, sch, seed=1), rowvar=False)
    C = L @ L.T
    assert np.linalg.norm(S - C) / np.linalg.norm(C) < 0.10


def test_training_and_sampling_are_seeded():
    X = np.random.default_rng(0).standard_normal((100, 4))
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        m = sa.ScoreMLP(4, width=8)
        sa.train_ddpm(m, X, 5, seed=3)
        out.append(sa.sample_ddpm(m, 10, sa.DDPMSchedule(10), seed=4))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12, atol=1e-12)
