"""POKE-SMC: choosing the unmasking path of a masked diffusion language model.

Reference implementation of the ICML 2026 paper's method, from its abstract:

- :class:`MaskedDiffusionTransformer`, :class:`TransformersMaskedLM`: masked diffusion
  LMs (partially masked sequence -> per-position logits), and
  :func:`train_masked_diffusion` / :func:`masked_diffusion_loss`, the MDLM/LLaDA recipe.
- :func:`decode` / :func:`infill` with the unmasking strategies ``"random"``,
  ``"confidence"``, ``"margin"``, ``"entropy"``, :class:`BestOfN`, :class:`MajorityVote`
  and :class:`PokeSMC`; :func:`decode` takes LLaDA's semi-autoregressive blocks, batches
  of prompts of unequal lengths (padding and an attention mask) and an end-of-sequence
  token; every result carries its Path LL and its NFE.
- :func:`path_log_likelihood`: the Path LL of a recorded trajectory.
- :class:`PokeValue`, :func:`collect_rollouts`, :func:`fit_poke`: POKE, the value
  estimator of the future Path LL of a partial trajectory.
- :class:`PokeSMC`, :func:`systematic_resample`, :func:`effective_sample_size`:
  sequential Monte Carlo over unmasking paths.
"""

from importlib.metadata import PackageNotFoundError, version

from poke_smc.decoding import (
    SCORES,
    BestOfN,
    DecodePlan,
    DecodeResult,
    MajorityVote,
    ScoreRemasking,
    decode,
    infill,
    majority_vote,
    path_log_likelihood,
    reveal_schedule,
)
from poke_smc.model import (
    MaskedDiffusionLM,
    MaskedDiffusionTransformer,
    NFECounter,
    TransformersMaskedLM,
)
from poke_smc.poke import PokeFit, PokeValue, Rollouts, collect_rollouts, fit_poke, greedy_value
from poke_smc.smc import (
    PokeSMC,
    effective_sample_size,
    multinomial_resample,
    systematic_resample,
)
from poke_smc.tasks import AdditionTask, EvalSet, ShakespeareInfill, SudokuTask, Task
from poke_smc.training import TrainHistory, masked_diffusion_loss, train_masked_diffusion

try:
    __version__ = version("poke-smc")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "SCORES",
    "AdditionTask",
    "BestOfN",
    "DecodePlan",
    "DecodeResult",
    "EvalSet",
    "MajorityVote",
    "MaskedDiffusionLM",
    "MaskedDiffusionTransformer",
    "NFECounter",
    "PokeFit",
    "PokeSMC",
    "PokeValue",
    "Rollouts",
    "ScoreRemasking",
    "ShakespeareInfill",
    "SudokuTask",
    "Task",
    "TrainHistory",
    "TransformersMaskedLM",
    "collect_rollouts",
    "decode",
    "effective_sample_size",
    "fit_poke",
    "greedy_value",
    "infill",
    "majority_vote",
    "masked_diffusion_loss",
    "multinomial_resample",
    "path_log_likelihood",
    "reveal_schedule",
    "systematic_resample",
    "train_masked_diffusion",
]
