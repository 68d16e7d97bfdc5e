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
  estimate ``H ~ d * E[log ||a - a'||] + const`` of the action entropy is differentiable
  through both generations. Its weight ``alpha`` is tuned by dual descent towards a
  target entropy, as SAC tunes its temperature (SAC needs log-likelihoods; we do not).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from rfo_flowpolicy.policies import FlowPolicy, _SquashedPolicy


def stability_loss(policy: FlowPolicy, reference: FlowPolicy, obs: Tensor) -> Tensor:
    """Flow-matching distance of ``policy`` to a frozen ``reference`` flow policy.

    Args:
        policy: The flow policy being trained.
        reference: A copy of it (e.g. an EMA), not differentiated.
        obs: Observations (n, obs_dim).

    Returns:
        Scalar loss (0 when the two fields agree on straight paths).
    """
    noise = policy.sample_noise(obs.shape[0])
    with torch.no_grad():
        target = reference.generate(obs, noise)
    return policy.flow_matching_loss(obs, target, noise)


def entropy_estimate(
    policy: _SquashedPolicy, obs: Tensor, first: Tensor | None = None, eps: float = 1e-2
) -> Tensor:
    """Nearest-neighbour (k=1, two samples) entropy estimate of the action chunk, in nats.

    Actions are rescaled to [-1, 1]^d first. For two samples the Kozachenko-Leonenko
    estimator is ``d log r + log V_d + gamma`` with ``r`` their distance and ``V_d``
    the unit-ball volume; we average it over the batch.

    Args:
        policy: Any policy of this package.
        obs: Observations (n, obs_dim).
        first: Optional first sample of action chunks (n, chunk, act_dim) for ``obs``
            (e.g. the rollout's first actions); a second one is generated.
        eps: Added to distances so the gradient stays finite.

    Returns:
        Scalar entropy estimate (differentiable in the policy's parameters).
    """
    if first is None:
        first = policy.squash(policy.generate(obs))
    second = policy.squash(policy.generate(obs))
    a = (torch.stack([first, second]) - policy.act_center) / policy.act_half
    a = a.reshape(2, obs.shape[0], -1)
    d = a.shape[-1]
    r = (a[0] - a[1]).norm(dim=1) + eps
    log_vd = (d / 2) * math.log(math.pi) - math.lgamma(d / 2 + 1)
    return d * torch.log(r).mean() + log_vd + 0.5772156649


class EntropyTemperature(torch.nn.Module):
    """Dual variable ``alpha = exp(log_alpha)`` of the exploration bonus.

    Args:
        init_alpha: Starting weight.
        target_entropy: Desired entropy of the action chunk (nats).
    """

    def __init__(self, init_alpha: float, target_entropy: float) -> None:
        super().__init__()
        if not init_alpha > 0:
            raise ValueError(f"init_alpha must be > 0, got {init_alpha}")
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(init_alpha)))
        self.target_entropy = float(target_entropy)

    @property
    def alpha(self) -> Tensor:
        """Current weight (detached)."""
        return self.log_alpha.exp().detach()

    def loss(self, entropy: Tensor) -> Tensor:
        """Dual loss: lowers alpha when entropy is above target, raises it below."""
        return self.log_alpha * (entropy.detach() - self.target_entropy)
