"""Specification of ``acframe.data.tree.to_device``: the learner's copy of a batch to its device."""
import pytest
import torch

from acframe.data import make_tree
from acframe.data.tree import to_device


def batch():
    return make_tree({'obs': torch.zeros(3, 2, 4, 4, dtype=torch.uint8), 'reward': torch.ones(2, 2),
                      'stats': {'logit': torch.zeros(2, 2, 3)}})


def test_on_the_cpu_the_batch_is_used_as_it_is():
    data = batch()
    assert to_device(data, torch.device('cpu')) is data


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_to_a_gpu_every_leaf_moves_and_keeps_its_dtype():
    moved = to_device(batch(), torch.device('cuda'))
    torch.cuda.synchronize()
    assert moved.obs.is_cuda and moved.obs.dtype == torch.uint8 and moved.stats.logit.is_cuda
    assert torch.equal(moved.reward.cpu(), torch.ones(2, 2))
