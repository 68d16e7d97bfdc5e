import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sag_saga_iag import LinearModelProblem, solve  # noqa: E402
from sag_saga_iag.torch_batched import batched_solve  # noqa: E402


@pytest.mark.parametrize(
    "method,sampling,loss,fit_intercept",
    [
        ("sag", "uniform", "logistic", True),
        ("saga", "reshuffle", "squared", False),
        ("iag", "cyclic", "logistic", False),
    ],
)
def test_batched_equals_the_numpy_solver(method, sampling, loss, fit_intercept, device):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 25, 4))  # three different data sets of one shape
    Y = rng.normal(size=(3, 25))
    Y = np.sign(Y) if loss == "logistic" else Y
    alphas = [0.05, 0.2, 1.0]
    res = batched_solve(
        X,
        Y,
        method=method,
        loss=loss,
        alpha=alphas,
        n_epochs=4,
        sampling=sampling,
        seeds=11,
        fit_intercept=fit_intercept,
        device=device,
    )
    assert res.x.device.type == torch.device(device).type
    for b in range(3):
        prob = LinearModelProblem(
            X[b], Y[b], loss=loss, alpha=alphas[b], fit_intercept=fit_intercept
        )
        ref = solve(prob, method, n_epochs=4, sampling=sampling, random_state=11 + b)
        np.testing.assert_allclose(res.x[b].cpu().numpy(), ref.x, atol=1e-10)
        np.testing.assert_allclose(
            res.objective[:, b].cpu().numpy(), ref.history["objective"], atol=1e-10
        )
        assert res.step_size[b].item() == pytest.approx(ref.step_size, rel=1e-12)


def test_batched_bad_input():
    X = np.ones((5, 2))
    with pytest.raises(ValueError, match="shape"):
        batched_solve(X, np.ones(5))
    with pytest.raises(ValueError, match="rows"):
        batched_solve(X, np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        batched_solve(X, np.zeros((1, 5)))
    with pytest.raises(ValueError, match="step_size"):
        batched_solve(X, np.ones((1, 5)), step_size=0.0)
    with pytest.raises(ValueError, match="alpha"):
        batched_solve(X, np.ones((1, 5)), alpha=-1.0)
