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
    # AtariPreprocessing repeats each action for 4 frames and max-pools the last two (EnvPool's frames); the ALE
    # steps one frame at a time (a v5 id's own frame skip keeps only the last frame)
    assert train.unwrapped._frameskip == 1
    assert next(w for w in _wrappers(train) if type(w).__name__ == 'AtariPreprocessing').frame_skip == 4


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


BLOCK_CV2 = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == 'cv2' or name.startswith('cv2.'):
            raise ImportError('cv2 blocked')
sys.meta_path.insert(0, Block())
"""


def test_ale_py_without_opencv_is_one_line_naming_the_extra(tmp_path):
    """ale-py installed but opencv not (AtariPreprocessing resizes with it): one line naming the extra, as for a
    missing ale-py (it was gymnasium's DependencyNotInstalled traceback)."""
    import os
    import subprocess
    import sys

    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    (tmp_path / 'sitecustomize.py').write_text(BLOCK_CV2)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'pong_impala.py', '--exp-dir', 'run', '-q'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    lines = [line for line in done.stderr.splitlines() if line.startswith('acframe: error: ')]
    assert done.returncode == 2 and 'Traceback' not in done.stderr and not (tmp_path / 'run').exists(), done.stderr
    assert len(lines) == 1 and "pip install 'acframe[atari]'" in lines[0], done.stderr


@pytest.mark.parametrize('config', ['pong_impala.py', 'breakout_impala.py', 'pong_a2c.py', 'pong_ppo.py',
                                    'breakout_a2c.py'])
def test_the_atari_configs_compile_with_the_atari_chain_and_an_image_encoder(config):
    cfg = compile_config(config)
    assert cfg.env.atari.enable and cfg.env.env_id.startswith('ALE/') and cfg.env.stop_value >= 19.5  # a score near Pong's 21 or above
    assert cfg.policy.model.encoder in ('nature_cnn', 'impala_resnet')


@pytest.mark.parametrize('config', ['breakout_impala.py', 'breakout_a2c.py'])
def test_the_breakout_configs_score_whole_games_with_sampled_actions(config):
    """Breakout is scored on whole games with sampled actions, as the RL Zoo scores Atari (its measured scores are
    those of sampled actions; FIRE follows each lost life either way: tests/envs/test_envpool_manager.py)."""
    assert compile_config(config).policy.eval.deterministic is False


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


def test_one_image_key_of_a_dict_observation_stays_a_uint8_image_and_images_with_vectors_stay_a_dict():
    from acframe.envs import FlattenDictObservation

    env = ImageAndVector(MovingDotEnv(size=8))
    image_only = FlattenDictObservation(env, ['image'])
    assert image_only.observation_space == gym.spaces.Box(0, 255, (8, 8), dtype=np.uint8)
    obs, _ = image_only.reset(seed=0)
    assert obs.dtype == np.uint8 and obs.shape == (8, 8)
    assert FlattenDictObservation(env, ['vector']).reset(seed=0)[0].shape == (3,)
    mixed = FlattenDictObservation(env, ['vector', 'image'])  # the chosen order is kept
    assert list(mixed.observation_space.spaces) == ['vector', 'image']
    assert mixed.observation_space['image'] == gym.spaces.Box(0, 255, (8, 8), dtype=np.uint8)
    obs, _ = mixed.reset(seed=0)
    assert obs['image'].dtype == np.uint8 and obs['vector'].dtype == np.float32 and obs['vector'].shape == (3,)
    assert list(FlattenDictObservation(env, None).observation_space.spaces) == ['image', 'vector']  # None: sorted


def goal_env(**env_kwargs):
    return build_env(dict(type='toy_pixel_goal', env_id='toy_pixel_goal', env_kwargs=env_kwargs), 0, 0, 'collector')


def test_the_dot_to_target_env_shows_the_dot_in_the_image_and_the_target_only_in_the_vector():
    env = goal_env(size=6)
    assert env.observation_space == gym.spaces.Dict({'image': gym.spaces.Box(0, 255, (1, 6, 6), dtype=np.uint8),
                                                     'target': gym.spaces.Box(0.0, 1.0, (2,), dtype=np.float32)})
    obs, _ = env.reset(seed=4)
    rewards = []
    for _ in range(40):
        dot = np.argwhere(obs['image'][0] == 255)[0]
        target = np.rint(obs['target'] * 5).astype(int)
        assert obs['image'].sum() == 255 and not (dot == target).all()  # one dot, and the image shows no target
        moves = [np.abs(target - np.clip(dot + m, 0, 5)).sum() for m in MovingDotEnv.MOVES]
        closer, away = int(np.argmin(moves)), int(np.argmax(moves))
        obs, reward, terminated, truncated, _ = env.step(closer if len(rewards) % 2 == 0 else away)
        rewards.append(reward)
        assert not terminated
        if truncated:
            obs, _ = env.reset()
    assert rewards[0::2] == [1.0] * 20 and rewards[1::2] == [0.0] * 20  # closer scores 1, away 0


def test_dict_observations_cross_the_env_manager_per_key_with_their_final_observations():
    cfg = compile_config((dict(env=dict(env_id='toy_pixel_goal', collector_env_num=3, max_episode_steps=5),
                               policy=dict(collect=dict(n_sample=3))),
                          dict(env=dict(type='toy_pixel_goal'), policy=dict(type='impala'))), seed=0)
    with make_env_manager(cfg, 'collector', 3, 0) as env:
        obs = env.reset()
        assert obs['image'].shape == (3, 1, 8, 8) and obs['image'].dtype == np.uint8 and obs['target'].shape == (3, 2)
        for _ in range(5):
            last = obs
            result = env.step(np.zeros(3, dtype=np.int64))
            obs = result.obs
        assert result.truncated.all() and list(result.done_index) == [0, 1, 2]
        assert result.final_obs['image'].dtype == np.uint8 and result.final_obs['image'].shape == (3, 1, 8, 8)
        assert np.array_equal(result.final_obs['target'], last['target'])  # the target stays until it is reached


@pytest.mark.parametrize('config', ['pong_impala.py', 'breakout_impala.py'])
def test_the_shipped_atari_configs_pass_check_env(config, tmp_path):
    """check-env -c pong_impala.py failed its seeding check: EpisodicLife continued a game on reset(seed=...) with a
    no-op step (the seed ignored); a seeded reset now starts the game that seed gives, as any env's does."""
    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    from acframe.envs.check import check_env

    report = check_env(compile_config(config))
    assert report.ok, [f.line() for f in report.findings]
    env = build_env(atari_env_cfg('ALE/Pong-v5'), 0, 0, 'collector')
    first, _ = env.reset(seed=3)
    for _ in range(50):
        env.step(0)
    again, _ = env.reset(seed=3)  # (mid-game: the no-op continuation would have given the game's next frame)
    np.testing.assert_array_equal(first, again)
    env.close()


def test_rgb_atari_frames_with_a_frame_stack_are_refused_naming_the_fix():
    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    from acframe.errors import UnsupportedSpaceError
    from acframe.policy import create_policy

    cfg = compile_config('pong_impala.py', overrides=['env.atari.grayscale=False'])
    env = build_env(dict(cfg.env), 0, 0, 'collector')
    with pytest.raises(UnsupportedSpaceError, match=r"has Box\(0, 255, \(4, 84, 84, 3\), uint8\); RGB frames are not "
                                                    r"stacked: set env.atari.frame_stack=1 or keep env.atari.grayscale"):
        create_policy(cfg, env.observation_space, env.action_space)
    env.close()
