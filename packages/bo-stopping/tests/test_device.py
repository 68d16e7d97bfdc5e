import pytest
import torch
from bo_stopping import CostAwareStopping, gittins_index, run_bo


@pytest.mark.gpu
def test_index_and_loop_on_cuda():
    dev = torch.device("cuda")
    mean = torch.randn(100, dtype=torch.float64, device=dev, requires_grad=True)
    sigma = torch.rand(100, dtype=torch.float64, device=dev) + 0.1
    g = gittins_index(mean, sigma, torch.full((100,), 0.1, dtype=torch.float64, device=dev))
    g.sum().backward()
    cpu = gittins_index(mean.detach().cpu(), sigma.cpu(), 0.1)
    torch.testing.assert_close(g.detach().cpu(), cpu)

    def objective(x):
        return -((x - 0.3) ** 2).sum()

    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    res = run_bo(
        objective,
        bounds,
        0.01,
        stopping=CostAwareStopping(),
        max_evaluations=2,
        n_init=4,
        optimum=0.0,
        num_restarts=1,
        raw_samples=16,
        device="cuda",
    )
    assert res.X.device.type == "cuda" and res.regret.shape[0] == res.stopped_at + 1
