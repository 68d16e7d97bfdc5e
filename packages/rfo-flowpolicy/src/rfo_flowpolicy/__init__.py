"""RFO: reparameterization flow policy optimization.

Flow policies (actions integrated from Gaussian noise through a learned,
observation-conditioned velocity field with a fixed-step Euler or midpoint solver)
trained by backpropagating returns jointly through the flow generation and
differentiable dynamics, with a stability and an exploration regularizer and an
action-chunking variant; a Gaussian-policy RPG baseline in the same trainer;
differentiable torch versions of gymnasium's Pendulum, a CartPole swing-up and
Acrobot; and a learned world model for MuJoCo locomotion.
"""

from importlib.metadata import PackageNotFoundError, version

from rfo_flowpolicy.dynamics import (
    Acrobot,
    CartPoleSwingUp,
    ClassicControlModel,
    Pendulum,
    make_acrobot_env,
    make_cartpole_swingup_env,
)
from rfo_flowpolicy.policies import FlowPolicy, GaussianPolicy
from rfo_flowpolicy.regularizers import (
    EntropyTemperature,
    entropy_estimate,
    knn_entropy,
    stability_loss,
)
from rfo_flowpolicy.rpg import (
    EvalCallback,
    RPGConfig,
    RPGTrainer,
    TrainLog,
    episode_returns,
    evaluate_policy,
    td_lambda_targets,
)
from rfo_flowpolicy.worldmodel import WorldModel, hopper_terminated, never_terminated

try:
    __version__ = version("rfo-flowpolicy")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "Acrobot",
    "CartPoleSwingUp",
    "ClassicControlModel",
    "EntropyTemperature",
    "EvalCallback",
    "FlowPolicy",
    "GaussianPolicy",
    "Pendulum",
    "RPGConfig",
    "RPGTrainer",
    "TrainLog",
    "WorldModel",
    "__version__",
    "entropy_estimate",
    "episode_returns",
    "evaluate_policy",
    "hopper_terminated",
    "knn_entropy",
    "make_acrobot_env",
    "make_cartpole_swingup_env",
    "never_terminated",
    "stability_loss",
    "td_lambda_targets",
]
