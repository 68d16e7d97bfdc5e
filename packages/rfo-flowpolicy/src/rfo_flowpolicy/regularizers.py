"""The two regularizers of RFO (our design; the abstract names only their purpose).

* Stability: a flow-matching trust region. The current velocity field is regressed on
  straight paths from each noise ``x_0`` to the action that a slowly moving reference
  copy of the policy (an exponential moving average) generates from the same ``x_0``.
  This keeps the update close to the reference (a trust region in action space,
  without likelihoods) and keeps the ODE paths straight, so that few Euler steps stay
  accurate and the Jacobian of the generation, which the policy gradient multiplies
  through every step of the horizon, stays well conditioned.
* Exploration: a likelihood-free entropy bonus. For each observation two actions are
  generated from independent noises; the Kozachenko-Leonenko nearest-neighbour
  estimate ``H = d * log ||a - a'|| + log V_d + psi(2) - psi(1)`` of the action entropy
  is differentiable through both generations. Its weight ``alpha`` is tuned by dual
  descent towards a target entropy, as SAC tunes its temperature (SAC needs
  log-likelihoods; we do not).
"""

from __future__ import annotations

import math

import torch
from icml26_core.validation import check_float
from torch import Tensor

from rfo_flowpolicy.policies import FlowPolicy, _SquashedPolicy


def stability_loss(
    policy: FlowPolicy,
    reference: FlowPolicy,
    obs: Tensor,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Flow-matching distance of ``policy`` to a frozen ``reference`` flow policy.

    For noise ``x_0`` the reference generates ``x_1'``; the loss regresses the live
    field on the straight path from ``x_0`` to ``x_1'`` (see
    :meth:`FlowPolicy.flow_matching_loss`).

    Args:
        policy: The flow policy being trained.
        reference: A copy of it (e.g. an EMA), not differentiated.
        obs: Observations (n, obs_dim).
        generator: Source of the noise and the path times.

    Returns:
        Scalar loss (0 when the two fields agree on straight paths).
    """
    noise = policy.sample_noise(obs.shape[0], generator)
    with torch.no_grad():
        target = reference.generate(obs, noise)
    return policy.flow_matching_loss(obs, target, noise, generator)


def knn_entropy(samples: Tensor, eps: float = 0.0) -> Tensor:
    """Kozachenko-Leonenko nearest-neighbour entropy estimate (k = 1), in nats.

    For ``m`` samples ``x_1..x_m`` in ``R^d`` with nearest-neighbour distances ``r_i``::

        H = psi(m) - psi(1) + log V_d + (d / m) sum_i log(r_i + eps)

    with ``psi`` the digamma function and ``V_d = pi^(d/2) / Gamma(d/2 + 1)`` the volume
    of the unit ball. For two samples ``psi(2) - psi(1) = 1``. The estimate is
    consistent as ``m`` grows; at small ``m`` it is exact only where the density is
    flat over the nearest-neighbour distance (a bounded support biases it upwards).

    Args:
        samples: Shape (m, n, d): ``m >= 2`` samples for each of ``n`` independent
            distributions (e.g. ``m`` actions generated for each of ``n`` observations).
        eps: Added to the distances (keeps the gradient finite when two samples meet).

    Returns:
        Shape (n,): one estimate per distribution, differentiable in ``samples``.

    Raises:
        ValueError: If ``samples`` is not 3-D or has ``m < 2``.

    References:
        Kozachenko & Leonenko, "Sample estimate of the entropy of a random vector",
        Problems Inform. Transmission 23 (1987); Kraskov, Stoegbauer & Grassberger,
        "Estimating mutual information", Phys. Rev. E 69 (2004), eq. (20).
    """
    if samples.ndim != 3 or samples.shape[0] < 2:
        raise ValueError(f"samples must have shape (m >= 2, n, d), got {tuple(samples.shape)}")
    m, _, d = samples.shape
    if m == 2:
        r = (samples[0] - samples[1]).norm(dim=-1)[None]  # (1, n): both share the distance
    else:
        x = samples.transpose(0, 1)  # (n, m, d)
        parts = []
        for i in range(0, m, 1024):  # rows in blocks: memory O(n * 1024 * m)
            dist = torch.cdist(x[:, i : i + 1024], x)  # (n, block, m)
            rows = torch.arange(i, min(i + 1024, m), device=x.device)
            dist[:, rows - i, rows] = math.inf
            parts.append(dist.min(dim=-1).values)
        r = torch.cat(parts, dim=1).T  # (m, n)
    log_vd = (d / 2) * math.log(math.pi) - math.lgamma(d / 2 + 1)
    const = _digamma_int(m) - _digamma_int(1) + log_vd
    return d * torch.log(r + eps).mean(0) + const


def _digamma_int(m: int) -> float:
    # psi(m) = -gamma + sum_{j < m} 1 / j for a positive integer m
    return -0.5772156649015329 + sum(1.0 / j for j in range(1, m))


def entropy_estimate(
    policy: _SquashedPolicy,
    obs: Tensor,
    first: Tensor | None = None,
    eps: float = 1e-2,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Two-sample nearest-neighbour entropy estimate of the action chunk, in nats.

    Actions are rescaled to ``[-1, 1]^d`` (``d = chunk * act_dim``); for each
    observation two chunks are generated with independent noise and
    :func:`knn_entropy` with ``m = 2`` is applied: ``1 + log V_d + d log(r + eps)``,
    ``r`` the distance of the two. The batch mean is returned. The gradient flows
    through both generations; no log-density is needed.

    Args:
        policy: Any policy of this package.
        obs: Observations (n, obs_dim).
        first: Optional first sample of action chunks (n, chunk, act_dim) for ``obs``
            (e.g. the rollout's first actions); a second one is generated.
        eps: Added to distances so the gradient stays finite.
        generator: Source of the noise.

    Returns:
        Scalar entropy estimate (differentiable in the policy's parameters).
    """
    if first is None:
        first = policy.squash(policy.generate(obs, generator=generator))
    second = policy.squash(policy.generate(obs, generator=generator))
    a = (torch.stack([first, second]) - policy.act_center) / policy.act_half
    return knn_entropy(a.reshape(2, obs.shape[0], -1), eps=eps).mean()


class EntropyTemperature(torch.nn.Module):
    """Dual variable ``alpha = exp(log_alpha)`` of the exploration bonus.

    Args:
        init_alpha: Starting weight.
        target_entropy: Desired entropy of the action chunk (nats).
    """

    def __init__(self, init_alpha: float, target_entropy: float) -> None:
        super().__init__()
        init_alpha = check_float("init_alpha", init_alpha, low=0.0, low_inclusive=False)
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(init_alpha)))
        self.target_entropy = check_float("target_entropy", target_entropy)

    @property
    def alpha(self) -> Tensor:
        """Current weight (detached)."""
        return self.log_alpha.exp().detach()

    def loss(self, entropy: Tensor) -> Tensor:
        """Dual loss: lowers alpha when entropy is above target, raises it below."""
        return self.log_alpha * (entropy.detach() - self.target_entropy)
