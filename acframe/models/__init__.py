"""Model templates (registered in MODEL_REGISTRY) and action distributions."""
from .distributions import Categorical, DiagGaussian, MultiCategorical, make_distribution
from .normalization import ObsNormalizer, RewardNormalizer, RunningMeanStd
from .vac import VAC

__all__ = ['VAC', 'ObsNormalizer', 'RewardNormalizer', 'RunningMeanStd', 'Categorical', 'DiagGaussian', 'MultiCategorical', 'make_distribution']
