import numpy as np
import pytest
import score_anisotropy as sa
import torch

pytest.importorskip("diffusers")

# Importing diffusers' UNet2DModel costs about 10 s of CPU (it pulls in torch._dynamo and
# diffusers' transformer modules): every test here is `slow` (run with -m slow).
pytestmark = pytest.mark.slow


def _tiny(dim=16, **kw):
    kw = {"block_out_channels": (4, 8), "norm_num_groups": 4, "add_attention": False} | kw
    return sa.ScoreUNet(dim, **kw)


def test_unet_adapter_maps_b_by_d_to_b_by_d_and_uses_the_time():
    torch.manual_seed(0)
    m = _tiny()
    x = torch.randn(3, 16)
    out = m(x, torch.full((3,), 0.1))
    assert out.shape == (3, 16)
    assert torch.isfinite(out).all()
    # the timestep enters (scaled by time_scale): another time gives another output
    assert not torch.allclose(out, m(x, torch.full((3,), 0.9)))


def test_unet_ntk_is_symmetric_psd_and_matches_the_matrix_free_product():
    torch.manual_seed(0)
    m = _tiny()
    x, t = torch.randn(2, 16), torch.rand(2)
    K = sa.empirical_ntk(m, x, t, chunk=2)
    np.testing.assert_allclose(K, K.T, atol=1e-10)
    assert np.linalg.eigvalsh(K).min() > -1e-4 * np.abs(K).max()
    v = np.random.default_rng(0).standard_normal(16)
    np.testing.assert_allclose(sa.ntk_matvec(m, x, t)(v), K @ v, rtol=1e-4, atol=1e-5)


def test_unet_trains_with_train_ddpm():
    torch.manual_seed(0)
    m = _tiny()
    X = np.random.default_rng(0).standard_normal((64, 16))
    losses = sa.train_ddpm(m, X, 30, sa.DDPMSchedule(50), batch_size=32, lr=3e-3, seed=0)
    assert np.mean(losses[-5:]) < np.mean(losses[:5])


def test_unet_bad_configs_raise_naming_the_argument():
    from diffusers import UNet2DModel

    with pytest.raises(ValueError, match="dim"):
        _tiny(15)
    with pytest.raises(ValueError, match="side 3"):
        _tiny(9)  # 3x3 cannot be downsampled once
    with pytest.raises(ValueError, match="norm_num_groups"):
        _tiny(16, block_out_channels=(6, 8))
    other = UNet2DModel(
        sample_size=4,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(4, 8),
        down_block_types=("DownBlock2D",) * 2,
        up_block_types=("UpBlock2D",) * 2,
        norm_num_groups=4,
    )
    with pytest.raises(ValueError, match="in_channels"):
        sa.ScoreUNet(16, unet=other)
    with pytest.raises(TypeError, match="unet"):
        sa.ScoreUNet(16, unet=torch.nn.Linear(2, 2))
