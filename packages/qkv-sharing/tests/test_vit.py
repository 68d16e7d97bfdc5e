import pytest
import torch
from qkv_sharing import SHARING_VARIANTS, SharedViT


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
def test_vit_shapes_and_a_learning_step(sharing):
    torch.manual_seed(0)
    vit = SharedViT(8, 2, 10, dim=32, n_heads=4, n_kv_heads=2, sharing=sharing)
    x, y = torch.rand(8, 8, 8), torch.randint(0, 10, (8,))
    opt = torch.optim.Adam(vit.parameters(), lr=5e-3)
    losses = []
    for _ in range(40):
        loss = torch.nn.functional.cross_entropy(vit(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert vit(x).shape == (8, 10)
    assert losses[-1] < 0.5 * losses[0]  # fits a small batch


def test_vit_sees_where_a_patch_is():
    # 2-D rotary positions: moving a pixel to another patch changes the logits
    vit = SharedViT(8, 2, 10, dim=32, n_heads=4, sharing="q=k=v", asymmetric=True).eval()
    a, b = torch.zeros(1, 8, 8), torch.zeros(1, 8, 8)
    a[0, 0, 0] = b[0, 6, 6] = 1.0
    assert not torch.allclose(vit(a), vit(b))


def test_vit_bad_input():
    with pytest.raises(ValueError, match=r"patch_size \(3\) must divide image_size \(8\)"):
        SharedViT(8, 3, 10)
    vit = SharedViT(8, 2, 10)
    with pytest.raises(ValueError, match=r"images must have shape \(batch, 1, 8, 8\)"):
        vit(torch.rand(2, 28, 28))
    with pytest.raises(TypeError, match="images must be a float"):
        vit(torch.ones(2, 8, 8, dtype=torch.long))
