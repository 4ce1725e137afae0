"""Model templates (registered in MODEL_REGISTRY) and action distributions."""
from .distributions import Categorical, DiagGaussian, MultiCategorical, make_distribution
from .vac import VAC

__all__ = ['VAC', 'Categorical', 'DiagGaussian', 'MultiCategorical', 'make_distribution']
