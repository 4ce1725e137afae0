"""Specification of ``acframe.models.encoders``: the Nature CNN and IMPALA ResNet shapes, uint8 scaling, layouts."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from acframe.models import VAC
from acframe.models.acer import ACERDiscrete, ACERSDN
from acframe.models.encoders import build_encoder
from acframe.policy import fill_model_spaces

ATARI = (4, 84, 84)


@pytest.mark.parametrize('encoder, conv_out', [('nature_cnn', 64 * 7 * 7), ('impala_resnet', 32 * 11 * 11)])
def test_atari_frames_give_the_papers_feature_sizes(encoder, conv_out):
    module, feature = build_encoder(ATARI, encoder, [256], 'relu')
    assert feature == 256
    assert module.head[0].in_features == conv_out  # 84x84: Nature 20-9-7, IMPALA 42-21-11
    out = module(torch.zeros((3, 2) + ATARI, dtype=torch.uint8))  # any leading dims (T, B)
    assert out.shape == (3, 2, 256)


def test_uint8_images_are_scaled_to_unit_range_inside_the_encoder():
    module, _ = build_encoder((2, 16, 16), 'impala_resnet', [32], 'relu', channels=[8])
    image = torch.randint(0, 256, (5, 2, 16, 16), dtype=torch.uint8)
    torch.testing.assert_close(module(image), module(image.float() / 255.0))


def test_channels_last_and_single_channel_images_are_laid_out_for_the_convolutions():
    chw, _ = build_encoder((3, 36, 36), 'nature_cnn', [16], 'relu')
    hwc, _ = build_encoder((36, 36, 3), 'nature_cnn', [16], 'relu')
    hwc.load_state_dict(chw.state_dict())
    image = torch.randint(0, 256, (4, 3, 36, 36), dtype=torch.uint8)
    torch.testing.assert_close(hwc(image.permute(0, 2, 3, 1)), chw(image))
    grey, _ = build_encoder((36, 36), 'nature_cnn', [16], 'relu')
    assert grey(torch.zeros((4, 36, 36), dtype=torch.uint8)).shape == (4, 16)


def test_wrong_encoder_for_the_observation_is_a_clear_error():
    with pytest.raises(ValueError, match="encoder='nature_cnn' or 'impala_resnet'"):
        build_encoder(ATARI, 'mlp', [64], 'tanh')
    with pytest.raises(ValueError, match="use 'impala_resnet' for small images"):
        build_encoder((2, 16, 16), 'nature_cnn', [64], 'relu')
    with pytest.raises(ValueError, match="use encoder='mlp' for vectors"):
        build_encoder(8, 'impala_resnet', [64], 'relu')
    with pytest.raises(ValueError, match="is not one of"):
        build_encoder(8, 'resnet50', [64], 'relu')


@pytest.mark.parametrize('model_fn', [
    lambda: VAC(list(ATARI), 6, 'discrete', encoder='nature_cnn', encoder_hidden_size_list=[512], activation='relu'),
    lambda: VAC(list(ATARI), 6, 'discrete', encoder='impala_resnet', share_encoder=False, encoder_hidden_size_list=[256]),
    lambda: ACERDiscrete(list(ATARI), 6, encoder='nature_cnn', encoder_hidden_size_list=[512]),
])
def test_actor_critic_models_take_uint8_frames(model_fn):
    out = model_fn()(torch.zeros((7, 2) + ATARI, dtype=torch.uint8), mode='compute_actor_critic')
    assert out['logit'].shape == (7, 2, 6) and out['value'].shape == (7, 2)


def test_continuous_acer_model_takes_images():
    model = ACERSDN([2, 16, 16], 3, encoder='impala_resnet', encoder_channels=[8], encoder_hidden_size_list=[32])
    obs = torch.zeros((5, 2, 16, 16), dtype=torch.uint8)
    out = model(obs, actions=torch.zeros(5, 1, 3))
    assert out['mu'].shape == (5, 3) and out['q_value'].shape == (5, 1)


def test_image_observation_spaces_fill_the_model_shape_as_a_list():
    cfg = EasyDict(policy=dict(type='impala', model=dict()), env=dict(env_id='ALE/Pong-v5'))
    from acframe.policy import policy_class
    fill_model_spaces(cfg, gym.spaces.Box(0, 255, ATARI, dtype=np.uint8), gym.spaces.Discrete(6), policy_class(cfg))
    assert list(cfg.policy.model.obs_shape) == list(ATARI)
    assert cfg.policy.model.action_shape == 6
