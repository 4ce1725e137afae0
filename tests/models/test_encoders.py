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


def test_images_of_more_channels_than_rgb_kept_last_are_read_as_image_layout_says():
    """(40, 40, 6), two RGB cameras: 'auto' cannot tell it from 40 channels of 40x6 and refuses rather than guess;
    image_layout='hwc' reads it channels-last (the same numbers as the channels-first frame), 'chw' as it stands."""
    with pytest.raises(ValueError, match=r"shape \[40, 40, 6\] may be channels-last .* set policy.model.image_layout="
                                         r"'hwc' or 'chw'"):
        build_encoder((40, 40, 6), 'impala_resnet', [16], 'relu', channels=[8])
    chw, _ = build_encoder((6, 40, 40), 'impala_resnet', [16], 'relu', channels=[8])
    hwc, _ = build_encoder((40, 40, 6), 'impala_resnet', [16], 'relu', channels=[8], layout='hwc')
    hwc.load_state_dict(chw.state_dict())
    image = torch.randint(0, 256, (3, 6, 40, 40), dtype=torch.uint8)
    torch.testing.assert_close(hwc(image.permute(0, 2, 3, 1)), chw(image))
    as_given, _ = build_encoder((40, 40, 6), 'impala_resnet', [16], 'relu', channels=[8], layout='chw')
    assert as_given.trunk[0].in_channels == 40
    # the shapes 'auto' reads without asking: RGB last, grey frame stacks (up to 8) first, a feature map first
    for shape, channels in (((40, 40, 3), 3), ((8, 40, 40), 8), ((32, 8, 8), 32)):
        assert build_encoder(shape, 'impala_resnet', [16], 'relu', channels=[8])[0].trunk[0].in_channels == channels
    with pytest.raises(ValueError, match="policy.model.image_layout = 'nhwc' is not one of"):
        build_encoder((3, 40, 40), 'impala_resnet', [16], 'relu', layout='nhwc')
    # a cube of small dims: MiniGrid's 3x3 RGB view (agent_view_size=3), or 3 channels of 3x3: refused alike
    with pytest.raises(ValueError, match=r"shape \[3, 3, 3\] may be channels-last"):
        build_encoder((3, 3, 3), 'impala_resnet', [16], 'relu', channels=[8])
    assert build_encoder((3, 3, 3), 'impala_resnet', [16], 'relu', channels=[8], layout='hwc')[0].trunk[0].in_channels == 3


def test_a_dict_observation_takes_a_layout_per_image_key():
    """Two RGB cameras kept last beside a grey frame stack kept first: one layout for both misread one of them."""
    model = VAC({'cams': [40, 40, 6], 'stack': [4, 40, 40]}, 2, encoder='impala_resnet', encoder_channels=[8],
                encoder_hidden_size_list=[16], image_layout={'cams': 'hwc'})
    assert model.actor_encoder.images['cams'].trunk[0].in_channels == 6
    assert model.actor_encoder.images['stack'].trunk[0].in_channels == 4  # ('auto' for a key left out)
    with pytest.raises(ValueError, match=r"policy.model.image_layout names \['camz'\], which are not image keys of the "
                                         r"observation \(its image keys: \['cams', 'stack'\]\)"):
        VAC({'cams': [40, 40, 6], 'stack': [4, 40, 40]}, 2, encoder='impala_resnet', image_layout={'camz': 'hwc'})
    with pytest.raises(ValueError, match="is a dict of a Dict observation's image keys; this observation is one image"):
        VAC([40, 40, 6], 2, encoder='impala_resnet', image_layout={'cams': 'hwc'})


def test_every_model_takes_image_layout_for_its_image_keys_too():
    for model in (VAC({'cams': [40, 40, 6], 'v': 3}, 2, encoder='impala_resnet', encoder_channels=[8],
                      encoder_hidden_size_list=[16], image_layout='hwc'),
                  ACERDiscrete([40, 40, 6], 2, encoder='impala_resnet', encoder_channels=[8],
                               encoder_hidden_size_list=[16], image_layout='hwc'),
                  ACERSDN([40, 40, 6], 1, encoder='impala_resnet', encoder_channels=[8],
                          encoder_hidden_size_list=[16], image_layout='hwc')):
        convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
        assert convs and convs[0].in_channels == 6


def test_wrong_encoder_for_the_observation_is_a_clear_error():
    with pytest.raises(ValueError, match="encoder='nature_cnn' or 'impala_resnet'"):
        build_encoder(ATARI, 'mlp', [64], 'tanh')
    with pytest.raises(ValueError, match="use 'impala_resnet' for small images"):
        build_encoder((2, 16, 16), 'nature_cnn', [64], 'relu')
    with pytest.raises(ValueError, match="use encoder='mlp' for vectors"):
        build_encoder(8, 'impala_resnet', [64], 'relu')
    with pytest.raises(ValueError, match="is not one of"):
        build_encoder(8, 'resnet50', [64], 'relu')


@pytest.mark.parametrize('kwargs, key', [
    (dict(hidden_size_list=[-1]), 'encoder_hidden_size_list'), (dict(hidden_size_list=[8.5]), 'encoder_hidden_size_list'),
    (dict(hidden_size_list=64), 'encoder_hidden_size_list'), (dict(channels=[-16, 32]), 'encoder_channels'),
    (dict(channels=[]), 'encoder_channels'), (dict(channels=16), 'encoder_channels'),
    (dict(vector_hidden_size_list=[0]), 'vector_hidden_size_list'),
])
def test_a_layer_size_that_is_not_a_whole_number_above_0_names_its_key(kwargs, key):
    """A negative size was a torch traceback, 8.5 was cut to 8, [] channels built a CNN of no convolution."""
    args = {**dict(hidden_size_list=[64], channels=None, vector_hidden_size_list=[64]), **kwargs}
    with pytest.raises(ValueError, match=rf"policy.model.{key} = .* must be a list of whole numbers > 0"):
        build_encoder(ATARI, 'nature_cnn', args['hidden_size_list'], 'relu', args['channels'], 'mlp',
                      args['vector_hidden_size_list'])
    with pytest.raises(ValueError, match=r"policy.model.actor_head_hidden_size = -3 must be a whole number >= 0"):
        VAC(4, 2, 'discrete', actor_head_hidden_size=-3)
    # the models themselves, before list() of an int was a TypeError naming no key ('int' object is not iterable)
    from acframe.models.acer import ACERDiscrete, ACERSDN
    for build in (lambda: VAC(4, 2, 'discrete', encoder_hidden_size_list=64), lambda: ACERDiscrete(4, 2, encoder_hidden_size_list=64),
                  lambda: ACERSDN(4, 2, encoder_hidden_size_list=64)):
        with pytest.raises(ValueError, match=r"policy.model.encoder_hidden_size_list = 64 must be a list of whole"):
            build()
    with pytest.raises(ValueError, match=r"policy.model.advantage_hidden_size_list = 32 must be a list of whole"):
        ACERSDN(4, 2, advantage_hidden_size_list=32)


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


def test_the_shallow_nature_cnn_is_the_2013_dqn_network():
    """encoder_channels=[16, 32]: conv 16x8x8/4, 32x4x4/2 (Mnih et al. 2013; A3C; IMPALA's shallow agent)."""
    module, feature = build_encoder(ATARI, 'nature_cnn', [256], 'relu', channels=[16, 32])
    convs = [m for m in module.trunk if isinstance(m, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size, c.stride) for c in convs] == [(16, (8, 8), (4, 4)), (32, (4, 4), (2, 2))]
    assert module.head[0].in_features == 32 * 9 * 9 and feature == 256  # 84x84: 20 then 9
    with pytest.raises(ValueError, match="needs 3 entries"):
        build_encoder(ATARI, 'nature_cnn', [256], 'relu', channels=[16])


# ---- Dict observations mixing images and vectors ---------------------------------------------------------
GOAL = {'image': [1, 8, 8], 'target': 2}


def goal_obs(lead=(5,)):
    return {'image': torch.randint(0, 256, tuple(lead) + (1, 8, 8), dtype=torch.uint8),
            'target': torch.rand(tuple(lead) + (2,))}


@pytest.mark.parametrize('vector_encoder, hidden, feature', [('mlp', [8], 16 + 8), ('identity', [8], 16 + 2)])
def test_a_dict_observation_concatenates_the_image_features_and_the_encoded_vector(vector_encoder, hidden, feature):
    module, size = build_encoder(GOAL, 'impala_resnet', [16], 'relu', channels=[4], vector_encoder=vector_encoder,
                                 vector_hidden_size_list=hidden)
    assert size == feature
    obs = goal_obs((3, 2))
    out = module(obs)  # any leading dims (T, B)
    assert out.shape == (3, 2, feature)
    image_part = module.images['image'](obs['image'])
    torch.testing.assert_close(out[..., :16], image_part)  # images first, then the vector keys
    if vector_encoder == 'identity':
        torch.testing.assert_close(out[..., 16:], obs['target'])
    changed = dict(obs, target=obs['target'] + 1.0)  # the vector reaches the features
    assert not torch.allclose(module(changed)[..., 16:], out[..., 16:])


def test_several_vector_keys_are_concatenated_in_the_order_of_obs_shape_and_images_get_an_encoder_each():
    shape = {'b': 3, 'image': [1, 8, 8], 'a': 1, 'depth': [8, 8]}
    module, size = build_encoder(shape, 'impala_resnet', [16], 'relu', channels=[4], vector_encoder='identity')
    assert module.image_keys == ['image', 'depth'] and module.vector_keys == ['b', 'a'] and size == 16 + 16 + 4
    obs = {'b': torch.tensor([[1., 2., 3.]]), 'a': torch.tensor([[9.]]),
           'image': torch.zeros((1, 1, 8, 8), dtype=torch.uint8), 'depth': torch.zeros((1, 8, 8))}
    assert module(obs)[0, 32:].tolist() == [1., 2., 3., 9.]


def test_dict_observation_models_say_which_encoder_and_what_is_wrong():
    with pytest.raises(ValueError, match=r"observation 'image' of shape \[1, 8, 8\] is an image: set policy.model.encoder="):
        build_encoder(GOAL, 'mlp', [16], 'relu')
    with pytest.raises(ValueError, match="policy.model.vector_encoder 'conv' is not one of"):
        build_encoder(GOAL, 'impala_resnet', [16], 'relu', vector_encoder='conv')
    with pytest.raises(ValueError, match=r"policy.model.obs_shape\['x'\] = \[1, 2, 3, 4\]"):
        build_encoder({'x': [1, 2, 3, 4]}, 'impala_resnet', [16], 'relu')
    with pytest.raises(ValueError, match="obs_norm normalizes vector observations; the Dict observation"):
        VAC({'image': [1, 8, 8]}, 4, encoder='impala_resnet', obs_norm=True)


@pytest.mark.parametrize('model_fn, keys', [
    (lambda: VAC(GOAL, 4, 'discrete', encoder='impala_resnet', encoder_channels=[4], share_encoder=False), ('logit',)),
    (lambda: ACERDiscrete(GOAL, 4, encoder='impala_resnet', encoder_channels=[4]), ('logit', 'q_value')),
])
def test_actor_critic_models_take_dict_observations(model_fn, keys):
    out = model_fn()(goal_obs((7, 2)), mode='compute_actor_critic')
    assert out['value'].shape == (7, 2) and all(out[k].shape == (7, 2, 4) for k in keys)


def test_continuous_models_take_dict_observations():
    obs = goal_obs()
    sdn = ACERSDN(GOAL, 3, encoder='impala_resnet', encoder_channels=[4], vector_encoder='identity')
    assert sdn(obs, actions=torch.zeros(5, 1, 3))['q_value'].shape == (5, 1)
    vac = VAC(GOAL, 3, 'continuous', encoder='impala_resnet', encoder_channels=[4])
    assert vac(obs, mode='compute_actor')['mu'].shape == (5, 3)


def test_obs_norm_normalizes_the_vector_keys_of_a_dict_observation_only():
    model = VAC(GOAL, 4, encoder='impala_resnet', encoder_channels=[4], obs_norm=True)
    normalizer = model.obs_normalizer
    batch = goal_obs((50,))
    batch['target'] = batch['target'] * 4.0 + 3.0
    normalizer.update(batch)
    assert normalizer.mean.shape == (2,)
    torch.testing.assert_close(normalizer.mean.float(), batch['target'].mean(0), atol=0.05, rtol=0)
    out = normalizer(batch)
    assert torch.equal(out['image'], batch['image'])  # uint8 images pass untouched
    assert out['target'].mean(0).abs().max() < 0.05 and (out['target'].std(0) - 1).abs().max() < 0.05
    with torch.no_grad():  # the model applies it to the raw observation before its encoder
        direct = model.actor_encoder(out)
        torch.testing.assert_close(model.compute_actor(batch)['logit'], model.actor_out(direct))


def test_dict_observation_spaces_fill_the_model_shape_as_a_dict():
    cfg = EasyDict(policy=dict(type='impala', model=dict()), env=dict(env_id='toy_pixel_goal'))
    from acframe.policy import policy_class
    space = gym.spaces.Dict({'image': gym.spaces.Box(0, 255, (1, 8, 8), dtype=np.uint8),
                             'target': gym.spaces.Box(0.0, 1.0, (2,), dtype=np.float32)})
    fill_model_spaces(cfg, space, gym.spaces.Discrete(4), policy_class(cfg))
    assert {k: (list(v) if not isinstance(v, int) else v) for k, v in cfg.policy.model.obs_shape.items()} == GOAL
