"""Specification of ``acframe.worker.Evaluator``: an evaluation that reaches the stop value is confirmed on
fresh episodes before a run is solved, evaluation episodes always end, and the summary records how the run
was evaluated.
"""
import json

import gymnasium as gym
import numpy as np
import pytest

from acframe import ENV_REGISTRY
from acframe.config import compile_config
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.envs import make_env_manager
from acframe.worker.evaluator import CONFIRM_SEED_OFFSET, Evaluator, eval_score


class SeedDependentBandit(gym.Env):
    """One-step episodes paying ``lucky_reward`` when the env was last seeded below ``lucky_below``, else 0."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, lucky_below: int, lucky_reward: float = 10.0) -> None:
        self.lucky_below, self.lucky_reward, self.lucky = lucky_below, lucky_reward, False

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.lucky = seed < self.lucky_below
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), self.lucky_reward if self.lucky else 0.0, True, False, {}


class NeverEnds(gym.Env):
    """Reward 1 per step; never terminates and has no time limit."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 1.0, False, False, {}


@ENV_REGISTRY.register('test_seed_bandit')
def make_seed_bandit(env_cfg, **overrides):
    return SeedDependentBandit(**dict(env_cfg.get('env_kwargs') or {}))


@ENV_REGISTRY.register('test_never_ends')
def make_never_ends(env_cfg, **overrides):
    return NeverEnds()


def run(tmp_path, env_type, env=None, deterministic=True, max_env_step=40, name='run'):
    main = dict(exp_name=name, env=dict(env_id=env_type, collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=4,
                                        **(env or {})),
                policy=dict(collect=dict(n_sample=10), eval=dict(deterministic=deterministic, evaluator=dict(eval_freq=1))))
    create = dict(env=dict(type=env_type), policy=dict(type='a2c'))
    policy = serial_pipeline_onpolicy((main, create), seed=0, max_env_step=max_env_step,
                                      exp_dir=str(tmp_path / name), progress=False)
    return policy.summary


def test_an_evaluation_that_the_fresh_episodes_do_not_confirm_does_not_solve_the_run(tmp_path):
    """Evaluation seeds (100000+) pay 10, the confirmation's fresh seeds (150000+) pay 0: never solved."""
    summary = run(tmp_path, 'test_seed_bandit', env=dict(stop_value=5, n_confirm_episode=6,
                                                         env_kwargs=dict(lucky_below=100_000 + CONFIRM_SEED_OFFSET)))
    # the best evaluation is judged on all its episodes: 4 paying 10 and the 6 refuting ones paying 0
    assert not summary['solved'] and summary['best_eval_return'] == pytest.approx(4.0)
    assert summary['n_confirm_episode'] == 6
    assert len(summary['confirmations']) >= 2  # every crossing evaluation was checked, and failed
    assert all(c['eval_mean'] == 10.0 and c['mean'] == 0.0 and c['episodes'] == 6 and not c['solved']
               for c in summary['confirmations'])


def test_a_confirmed_evaluation_solves_the_run_and_the_summary_records_both(tmp_path):
    summary = run(tmp_path, 'test_seed_bandit', env=dict(stop_value=5, n_confirm_episode=6,
                                                         env_kwargs=dict(lucky_below=10 ** 9)))
    assert summary['solved'] and summary['env_steps'] == 0  # the first evaluation, confirmed
    [confirmation] = summary['confirmations']
    assert confirmation['eval_mean'] == 10.0 and confirmation['mean'] == 10.0 and confirmation['solved']


class ScriptedEvaluator(Evaluator):
    """An ``Evaluator`` whose episodes return the next scripted list of returns (no env, no policy)."""

    def __init__(self, script, **kwargs):
        super().__init__(env=type('Envs', (), {'seeds': [0, 1]})(), policy=None, eval_freq=1, **kwargs)
        self.script = list(script)

    def run_episodes(self, n_episode, seeds=None):
        returns = self.script.pop(0)
        assert len(returns) == n_episode
        return returns, [1] * n_episode


def test_an_evaluation_scores_the_mean_of_all_its_episodes_once_a_confirmation_ran():
    assert eval_score(7.0, 4, None) == 7.0
    assert eval_score(10.0, 4, {'mean': 0.0, 'episodes': 6}) == pytest.approx((4 * 10.0 + 6 * 0.0) / 10)


def test_a_lucky_evaluation_that_the_confirmation_refutes_does_not_become_the_best_weights():
    """Evaluation 1 (no candidate) means 4.5; evaluation 2 means 10 on its 4 episodes, but its 6 fresh ones pay 0
    (all 10: 4.0); evaluation 3 is confirmed (4 x 10 and 6 x 9: 9.4). ``on_best`` (ckpt_best.pth) sees 4.5, then 9.4."""
    saved = []
    evaluator = ScriptedEvaluator([[4.5] * 4, [10.0] * 4, [0.0] * 6, [10.0] * 4, [9.0] * 6],
                                  n_episode=4, stop_value=5.0, n_confirm_episode=6)
    first = evaluator.evaluate(0, 0, saved.append)
    lucky = evaluator.evaluate(1, 10, saved.append)
    assert (first['confirm'], lucky['mean'], lucky['solved']) == (None, 10.0, False)
    assert saved == [4.5] and evaluator.best_return == 4.5 and evaluator.last_return == 10.0
    confirmed = evaluator.evaluate(2, 20, saved.append)
    assert confirmed['solved'] and saved == [4.5, pytest.approx(9.4)] and evaluator.best_return == pytest.approx(9.4)


def test_a_confirmation_records_its_worst_and_best_episode():
    """A policy that wins most starts and loses a few outright (greedy Pong does) shows it in the record, not only
    in a large std: 4 x 21 and 2 x -21 mean 7.0, min -21, max 21."""
    evaluator = ScriptedEvaluator([[21.0] * 4, [21.0] * 4 + [-21.0] * 2], n_episode=4, stop_value=20.0,
                                  n_confirm_episode=6)
    result = evaluator.evaluate(0, 0)
    assert not result['solved']
    assert (result['confirm']['mean'], result['confirm']['min'], result['confirm']['max']) == (7.0, -21.0, 21.0)
    assert evaluator.confirmations == [result['confirm']]


def test_n_confirm_episode_zero_trusts_the_evaluation_alone(tmp_path):
    summary = run(tmp_path, 'test_seed_bandit', env=dict(stop_value=5, n_confirm_episode=0,
                                                         env_kwargs=dict(lucky_below=100_000 + CONFIRM_SEED_OFFSET)))
    assert summary['solved'] and summary['confirmations'] == []


@pytest.mark.parametrize('env, length', [(dict(eval_episode_cap=30), 30), (dict(max_episode_steps=20), 20)])
def test_a_user_env_that_never_ends_cannot_hang_the_evaluator(tmp_path, env, length):
    """No time limit: evaluation episodes end at env.max_episode_steps, or else at env.eval_episode_cap."""
    summary = run(tmp_path, 'test_never_ends', env=dict(stop_value=None, **env), max_env_step=20)
    assert summary['best_eval_return'] == float(length)


def test_every_env_factory_gets_the_time_limit_of_max_episode_steps():
    cfg = compile_config((dict(env=dict(env_id='x', max_episode_steps=7)), dict(env=dict(type='test_never_ends'),
                                                                                 policy=dict(type='a2c'))))
    env = make_env_manager(cfg, 'collector', 1, 0)
    try:
        env.reset()
        truncated = [env.step(np.zeros(1, np.int64)).truncated[0] for _ in range(7)]
    finally:
        env.close()
    assert truncated == [False] * 6 + [True]


def test_the_summary_records_sampled_or_deterministic_evaluation(tmp_path):
    summary = run(tmp_path, 'test_seed_bandit', env=dict(stop_value=None, env_kwargs=dict(lucky_below=0)),
                  deterministic=False, max_env_step=10)
    assert summary['eval_deterministic'] is False
    saved = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert saved['eval_deterministic'] is False and saved['n_confirm_episode'] == 50


def test_overriding_env_id_without_a_stop_value_warns_that_it_came_from_the_other_env():
    with pytest.warns(UserWarning, match=r"env.stop_value=-200 is the config's value for 'Pendulum-v1'"):
        compile_config('pendulum_acer.py', ['env.env_id=MountainCarContinuous-v0'])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        compile_config('pendulum_acer.py', ['env.env_id=MountainCarContinuous-v0', 'env.stop_value=90'])
        compile_config('pendulum_acer.py', ['policy.learn.learning_rate=0.01'])


def test_a_config_of_another_env_without_a_stop_value_warns_that_the_default_is_cartpoles():
    """A user's own config (a file or a pair) of another env that leaves env.stop_value out would stop as solved at
    CartPole's 195: one warning naming the env; none for CartPole, a stop value given, or a compiled config."""
    import warnings

    with pytest.warns(UserWarning, match=r"env.stop_value is not set, so the default 195.0 \(CartPole's\) stops a run "
                                         r"of Acrobot-v1 as solved"):
        compile_config((dict(env=dict(env_id='Acrobot-v1')), dict(policy=dict(type='a2c'))))
    with pytest.warns(UserWarning, match=r"a run of env type 'toy_dict' as solved"):
        compile_config((dict(env=dict()), dict(env=dict(type='toy_dict'), policy=dict(type='a2c'))))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        compile_config((dict(env=dict(env_id='CartPole-v1')), dict(policy=dict(type='a2c'))))
        compile_config((dict(env=dict(env_id='Acrobot-v1', stop_value=None)), dict(policy=dict(type='a2c'))))
        compile_config((dict(env=dict(env_id='Acrobot-v1')), dict(policy=dict(type='a2c'))), ['env.stop_value=-100'])
        compiled = compile_config((dict(env=dict(env_id='Acrobot-v1', stop_value=195.0)), dict(policy=dict(type='a2c'))))
        compile_config(compiled)


def test_where_nothing_trains_the_stop_value_warnings_are_not_given(tmp_path):
    """-m eval / export / load_policy (locate_run) and check-env -c read a config only to rebuild the env and model:
    a stop value means nothing there, so neither stop-value warning is given."""
    import warnings

    from acframe.envs.check import check_env_config
    from acframe.runs import locate_run

    config = tmp_path / 'pend.py'
    config.write_text("main_config = dict(env=dict(env_id='Pendulum-v1'))\n"
                      "create_config = dict(policy=dict(type='ppo'))\n")
    (tmp_path / 'model.pth').write_bytes(b'')
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        check_env_config(None, str(config), [], [], 0)
        check_env_config(None, str(config), ['env.env_id=Acrobot-v1'], [], 0)
        locate_run(str(tmp_path / 'model.pth'), str(config), ['env.env_id=Acrobot-v1'])
    with pytest.warns(UserWarning, match='env.stop_value is not set'):  # training it would
        compile_config(str(config))


def test_the_cli_prints_that_warning_as_one_line(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', 'env.env_id=Acrobot-v1',
                           '--max-env-step', '80', '-q', '--exp-dir', str(tmp_path / 'run'),
                           'policy.eval.evaluator.eval_freq=0', 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "acframe: warning: env.env_id was overridden to 'Acrobot-v1' but env.stop_value=490 is the config's value "
        "for 'CartPole-v1'; set env.stop_value for 'Acrobot-v1' (or env.stop_value=None to never stop early)"]


def test_an_env_id_that_names_no_env_gets_its_error_alone(tmp_path):
    """The stop-value warning is about another env's stop value: for a misspelt id the one line is the id's error."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', 'env.env_id=CartPoel-v1',
                           '--max-env-step', '80', '-q', '--exp-dir', str(tmp_path / 'run')],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "env.env_id 'CartPoel-v1' is neither a gymnasium id nor a short name. Did you mean 'CartPole-v1'?" \
        in proc.stderr
    assert not (tmp_path / 'run').exists()


def test_the_schedule_counts_from_the_evaluations_it_asked_for():
    """``EvalHistory.due``: the first check, then every ``eval_freq`` iterations after the last evaluation the schedule
    asked for; one outside it (the final weights' at a budget's end, at 13) does not move it; ``eval_freq=0``: the
    first only. A checkpoint from before ``schedule_iter`` counts from its last evaluation, as before."""
    from acframe.worker.evaluator import EvalHistory

    history = EvalHistory(5)
    for it in (0, 5, 10):
        assert history.due(it)
        history.record(it, it, 1.0, 1.0)
    assert not history.due(13)
    history.record(13, 13, 1.0, 1.0)  # the budget's end
    assert history.last_eval_iter == 13 and history.schedule_iter == 10
    restored = EvalHistory(5)
    restored.load_state_dict(history.state_dict())
    assert restored.due(15) and not restored.due(14)
    old = {k: v for k, v in history.state_dict().items() if k != 'schedule_iter'}
    restored.load_state_dict(old)
    assert restored.schedule_iter == 13 and not restored.due(15) and restored.due(18)
    never = EvalHistory(0)
    assert never.due(0)
    never.mark(0)
    assert not never.due(10 ** 6)
