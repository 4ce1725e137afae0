"""Specification of the image-observation envs: the moving-dot toy env and the Atari chain (``env.atari``)."""
import copy

import gymnasium as gym
import numpy as np
import pytest

from acframe.config import compile_config
from acframe.config.defaults import ENV
from acframe.envs import build_env, make_env_manager
from acframe.envs.toy import MovingDotEnv
from acframe.errors import ConfigError


def test_the_moving_dot_shows_two_uint8_frames_and_rewards_naming_the_last_move():
    env = build_env(dict(type='toy_pixel_dot', env_id='toy_pixel_dot', env_kwargs=dict(size=8)), 0, 0, 'collector')
    assert env.observation_space == gym.spaces.Box(0, 255, (2, 8, 8), dtype=np.uint8)
    obs, _ = env.reset(seed=3)
    dot = MovingDotEnv.MOVES
    for _ in range(30):
        before = np.argwhere(obs[1] == 255)[0]
        move = env.unwrapped._move
        obs, reward, terminated, truncated, _ = env.step(move)  # the right answer scores 1
        assert reward == 1.0 and not terminated
        after = np.argwhere(obs[1] == 255)[0]
        assert (np.argwhere(obs[0] == 255)[0] == before).all()  # the older frame is the previous one
        assert (after - before).tolist() in dot.tolist() and obs.dtype == np.uint8 and obs.sum() == 2 * 255
        wrong = (env.unwrapped._move + 1) % 4
        obs, reward, *_ = env.step(wrong)
        assert reward == 0.0
        if truncated:
            obs, _ = env.reset()


def atari_env_cfg(env_id='ALE/Breakout-v5', **atari):
    cfg = copy.deepcopy(ENV)
    cfg['env_id'] = env_id
    cfg['atari'].update(enable=True, **atari)
    return cfg


def test_atari_chain_gives_stacked_grey_uint8_frames_and_evaluates_whole_unclipped_games():
    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    train = build_env(atari_env_cfg(), 0, 0, 'collector')
    evaluate = build_env(atari_env_cfg(), 0, 0, 'evaluator')
    assert train.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), dtype=np.uint8)
    names = [type(w).__name__ for w in _wrappers(train)]
    assert names[:5] == ['GuardedEnv', 'FrameStackObservation', 'ClipReward', 'FireReset', 'EpisodicLife']
    assert 'AtariPreprocessing' in names
    eval_names = [type(w).__name__ for w in _wrappers(evaluate)]
    assert 'ClipReward' not in eval_names and 'EpisodicLife' not in eval_names and 'FireReset' in eval_names
    assert train.unwrapped._frameskip == 4  # the ALE skips frames, AtariPreprocessing does not skip again
    assert next(w for w in _wrappers(train) if type(w).__name__ == 'AtariPreprocessing').frame_skip == 1


def test_a_lost_life_ends_a_training_episode_but_not_the_game():
    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    env = build_env(atari_env_cfg(noop_max=0), 0, 0, 'collector')
    env.reset(seed=0)
    ale = env.unwrapped.ale
    lives = ale.lives()
    for _ in range(3000):
        _, _, terminated, truncated, _ = env.step(0)  # NOOP: Breakout's ball is missed, a life is lost
        if terminated:
            break
    assert terminated and ale.lives() == lives - 1 and not ale.game_over()
    env.reset()
    assert ale.lives() == lives - 1  # the game went on


def test_atari_config_errors_name_the_key():
    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    with pytest.raises(ConfigError, match='env.atari.frame_stack'):
        build_env(atari_env_cfg(frame_stack=0), 0, 0, 'collector')
    with pytest.raises(ConfigError, match="not an ALE env"):
        build_env(atari_env_cfg(env_id='CartPole-v1'), 0, 0, 'collector')


@pytest.mark.parametrize('config', ['pong_impala.py', 'breakout_impala.py', 'pong_a2c.py', 'pong_ppo.py'])
def test_the_atari_configs_compile_with_the_atari_chain_and_an_image_encoder(config):
    cfg = compile_config(config)
    assert cfg.env.atari.enable and cfg.env.env_id.startswith('ALE/') and cfg.env.stop_value >= 20
    assert cfg.policy.model.encoder in ('nature_cnn', 'impala_resnet')


def test_pong_config_compiles_with_its_atari_keys_and_builds_a_uint8_manager():
    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    cfg = compile_config('pong_impala.py', overrides=['env.collector_env_num=2'])
    assert cfg.env.atari.enable and cfg.env.atari.repeat_action_probability == 0.0
    with make_env_manager(cfg, 'collector', 2, 0) as env:
        obs = env.reset()
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8


def _wrappers(env):
    out = []
    while isinstance(env, gym.Wrapper):
        out.append(env)
        env = env.env
    return out


class ImageAndVector(gym.ObservationWrapper):
    """The moving dot's frames as ``obs['image']`` beside a 3-vector ``obs['vector']``."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = gym.spaces.Dict({'image': env.observation_space,
                                                  'vector': gym.spaces.Box(-1.0, 1.0, (3,), dtype=np.float32)})

    def observation(self, observation):
        return {'image': observation, 'vector': np.zeros(3, dtype=np.float32)}


def test_one_image_key_of_a_dict_observation_stays_a_uint8_image_and_mixing_is_refused_clearly():
    from acframe.envs import FlattenDictObservation

    env = ImageAndVector(MovingDotEnv(size=8))
    image_only = FlattenDictObservation(env, ['image'])
    assert image_only.observation_space == gym.spaces.Box(0, 255, (8, 8), dtype=np.uint8)
    obs, _ = image_only.reset(seed=0)
    assert obs.dtype == np.uint8 and obs.shape == (8, 8)
    assert FlattenDictObservation(env, ['vector']).reset(seed=0)[0].shape == (3,)
    with pytest.raises(ConfigError, match=r"env.obs_keys: observation 'image' is an image .* not supported yet"):
        FlattenDictObservation(env, None)
