"""Specification of DI-engine compatibility (issue 11): DI-engine's config files, scripts and CLI flags run under
acframe unchanged; keys that mean the same are aliases; keys acframe has no use for cost one warning line; typos
still fail. The files in ``ding_configs/`` are DI-engine 0.5.x's, with its structure and values."""
import json
import logging
import os
import re
import runpy
import subprocess
import sys
import warnings

import gymnasium as gym
import pytest

from acframe import POLICY_REGISTRY, serial_pipeline, serial_pipeline_onpolicy
from acframe.cli import main as cli_main
from acframe.config import compile_config
from acframe.config.ding_compat import DING_ENV_TYPES
from acframe.envs import make_env_manager
from acframe.errors import ConfigError, ConfigWarning
from acframe.policy import create_policy, env_steps_per_collection
from acframe.worker import steps_per_env

HERE = os.path.join(os.path.dirname(__file__), 'ding_configs')
FILES = sorted(f for f in os.listdir(HERE) if f.endswith('_config.py'))


def ding_file(name: str) -> str:
    return os.path.join(HERE, name)


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.name == 'acframe' and r.levelno == logging.WARNING]


def test_all_seven_files_of_the_issue_are_here():
    assert FILES == ['cartpole_a2c_config.py', 'cartpole_acer_config.py', 'cartpole_impala_config.py',
                     'cartpole_ppo_config.py', 'lunarlander_a2c_config.py', 'lunarlander_acer_config.py',
                     'lunarlander_impala_config.py', 'pendulum_a2c_config.py', 'pendulum_ppo_config.py']
    # (DI-engine 0.5.3's lunarlander_ppo_config.py runs under bench/ding_files.py; these copies predate it)


# ---- what each file compiles to ------------------------------------------------------------------------
# file -> key -> the value acframe uses (DI-engine's meaning of the file's keys)
EXPECTED = {
    'cartpole_a2c_config.py': {
        'env.env_id': 'CartPole-v1', 'env.stop_value': 195.0, 'env.manager': 'sync', 'policy.collect.n_sample': 80,
        'policy.learn.gae_lambda': 0.95, 'policy.learn.adv_norm': False, 'policy.learn.learning_rate': 0.001,
        'policy.model.obs_shape': 4, 'policy.model.encoder_hidden_size_list': [128, 128, 64]},
    'cartpole_acer_config.py': {
        'env.env_id': 'CartPole-v1', 'policy.other.replay_buffer.type': 'episodic',
        'policy.other.replay_buffer.unroll_len': 32, 'policy.learn.learning_rate': 0.0005,
        'policy.learn.discount_factor': 0.9, 'policy.learn.entropy_weight': 0.0, 'policy.collect.n_sample': 16},
    'cartpole_impala_config.py': {
        'env.env_id': 'CartPole-v1', 'policy.unroll_len': 32, 'policy.learn.discount_factor': 0.9,
        'policy.learn.lambda_': 0.95, 'policy.other.replay_buffer.type': 'fifo', 'exp_name': 'cartpole_impala_seed0'},
    'lunarlander_a2c_config.py': {
        'env.env_id': 'LunarLander-v3', 'env.manager': 'async', 'policy.learn.discount_factor': 0.995,
        'policy.learn.gae_lambda': 0.95, 'policy.model.share_encoder': False, 'policy.learn.value_weight': 0.1},
    'lunarlander_acer_config.py': {
        'env.env_id': 'LunarLander-v3', 'env.manager': 'async', 'env.stop_value': 5.0,
        'policy.other.replay_buffer.type': 'episodic', 'policy.other.replay_buffer.unroll_len': 32,
        # DI-engine's ACER buffer holds 50000 trajectories of 32 steps; acframe's counts transitions
        'policy.other.replay_buffer.replay_buffer_size': 50000 * 32, 'policy.learn.learning_rate': 0.0001,
        'policy.learn.update_per_collect': 10},
    'lunarlander_impala_config.py': {
        'env.env_id': 'LunarLander-v3', 'env.stop_value': 3000.0, 'policy.unroll_len': 16, 'policy.collect.n_sample': 32,
        'policy.other.replay_buffer.type': 'fifo', 'policy.learn.grad_clip_value': 5.0, 'policy.learn.grad_clip_type': 'clip_norm'},
    'pendulum_a2c_config.py': {
        'env.env_id': 'Pendulum-v1', 'policy.model.action_space': 'continuous', 'policy.learn.learning_rate': 3e-5,
        'policy.learn.discount_factor': 0.99, 'policy.collect.n_sample': 200},
    'cartpole_ppo_config.py': {
        'env.env_id': 'CartPole-v1', 'policy.learn.epoch_per_collect': 2, 'policy.learn.discount_factor': 0.9,
        'policy.learn.gae_lambda': 0.95, 'policy.model.critic_head_hidden_size': 128, 'policy.collect.n_sample': 256},
    'pendulum_ppo_config.py': {
        'env.env_id': 'Pendulum-v1', 'policy.recompute_adv': True, 'policy.learn.gae_lambda': 1.0,
        'policy.model.sigma_type': 'conditioned', 'policy.model.actor_head_hidden_size': 0,  # actor_head_layer_num=0
        'policy.model.critic_head_hidden_size': 0, 'policy.learn.epoch_per_collect': 10},
}


def get(cfg, path):
    for part in path.split('.'):
        cfg = cfg[part]
    return cfg


@pytest.mark.parametrize('name', FILES)
def test_each_file_compiles_to_what_it_means_in_di_engine(name, caplog):
    cfg = compile_config(ding_file(name))
    for path, want in EXPECTED[name].items():
        assert get(cfg, path) == want, path
    assert cfg.import_names == []  # dizoo.* are not imported
    notes = warnings_of(caplog)
    assert sum('dizoo.' in m for m in notes) == 1  # one note for the skipped import


@pytest.mark.parametrize('name', FILES)
def test_unused_di_engine_keys_cost_exactly_one_warning_line(name, caplog):
    compile_config(ding_file(name))
    lines = [m for m in warnings_of(caplog) if 'DI-engine keys acframe has no use for' in m]
    if name == 'cartpole_ppo_config.py':  # every key of that file is used
        assert lines == []
    else:
        assert len(lines) == 1 and '\n' not in lines[0]


def test_the_warning_names_every_unused_key(caplog):
    compile_config(ding_file('cartpole_impala_config.py'))
    line = next(m for m in warnings_of(caplog) if 'no use for' in m)
    for key in ('policy.nstep', 'policy.discount_factor', 'policy.collect.collector', 'policy.collect.discount_factor',
                'policy.collect.gae_lambda'):
        assert key in line
    caplog.clear()
    compile_config(ding_file('lunarlander_acer_config.py'))
    assert 'env.manager' in next(m for m in warnings_of(caplog) if 'no use for' in m)  # DI-engine's manager settings


def test_an_acframe_config_gets_no_di_engine_messages(caplog):
    compile_config('cartpole_impala.py')
    assert warnings_of(caplog) == []


def test_n_sample_of_a_di_engine_file_means_what_it_means_there():
    """cartpole_impala: 16 unrolls of 32 steps across 8 envs, i.e. 64 steps from every env (DI-engine's traj_len 32,
    two trajectories per env); cartpole_a2c: 80 transitions, 10 from each of its 8 envs."""
    impala = compile_config(ding_file('cartpole_impala_config.py'))
    assert steps_per_env(16, 8, unroll_len=32) == 64 and env_steps_per_collection(impala) == 16 * 32
    a2c = compile_config(ding_file('cartpole_a2c_config.py'))
    assert env_steps_per_collection(a2c) == 80 and steps_per_env(80, 8) == 10


# ---- the files run ---------------------------------------------------------------------------------------
# short budgets: a few collections and updates (and the final evaluation)
BUDGET = {'cartpole_a2c_config.py': 400, 'cartpole_ppo_config.py': 512, 'pendulum_ppo_config.py': 400, 'cartpole_acer_config.py': 1024, 'cartpole_impala_config.py': 1024,
          'lunarlander_a2c_config.py': 256, 'lunarlander_acer_config.py': 1024, 'lunarlander_impala_config.py': 1024,
          'pendulum_a2c_config.py': 600}
#: ACER's replays start after policy.other.replay_buffer.replay_start_size (10000 by default) stored transitions,
#: more than these budgets collect: a run that would never replay is refused, so they start replaying at once
SHORT_RUN = {'cartpole_acer_config.py': ['policy.other.replay_buffer.replay_start_size=0'],
             'lunarlander_acer_config.py': ['policy.other.replay_buffer.replay_start_size=0']}


@pytest.mark.parametrize('name', FILES)
def test_each_file_runs_unchanged_under_the_cli(name, tmp_path, capsys):
    exp_dir = tmp_path / 'run'
    code = cli_main(['-c', ding_file(name), '--env-step', str(BUDGET[name]), '--exp-dir', str(exp_dir), '-q',
                     'env.evaluator_env_num=2', 'env.n_evaluator_episode=2', 'env.max_episode_steps=200',
                     *SHORT_RUN.get(name, [])])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((exp_dir / 'summary.json').read_text())
    assert summary['env_steps'] >= BUDGET[name] and summary['train_iters'] >= 1


def test_a_file_runs_with_its_budget_only_from_a_subprocess_and_prints_one_line_per_message(tmp_path):
    """The whole file unchanged (its own evaluator settings); stderr carries the notes and one warning line."""
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', ding_file('pendulum_a2c_config.py'), '--env-step', '400',
                          '--exp-name', 'pendulum_run', '-q'], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / 'pendulum_run' / 'summary.json').is_file()  # --exp-name is the folder, as in DI-engine
    lines = out.stderr.strip().splitlines()
    assert [line for line in lines if 'no use for' in line] == [
        "acframe: warning: DI-engine keys acframe has no use for, ignored: env.act_scale, policy.learn.epoch_per_collect, "
        "policy.learn.batch_size (docs/from_di_engine.md says why)"]
    assert any(line.startswith("acframe: note: DI-engine's dizoo.classic_control.pendulum.envs.pendulum_env") for line in lines)


def test_a_refused_file_says_its_error_alone_without_the_notes_of_its_translation(tmp_path):
    """A DI-engine file with an unused key, a dizoo import and a bad value: the one line is the error; the notes and
    the unused-keys warning come once the file compiles."""
    text = open(ding_file('cartpole_ppo_config.py')).read()
    assert 'batch_size=64' in text and 'clip_ratio=0.2,' in text
    bad = tmp_path / 'bad_ppo_config.py'
    bad.write_text(text.replace('batch_size=64', 'batch_size=-3')
                   .replace('clip_ratio=0.2,', 'clip_ratio=0.2, learner=dict(train_iterations=10),'))
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', str(bad)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ''
    assert out.stderr.strip().splitlines() == ["acframe: error: config key 'policy.learn.batch_size' = -3 must be >= 1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ['bad_ppo_config.py']


def test_a_handler_of_the_users_on_the_acframe_logger_gets_each_note_once_and_warnings_keep_their_caller(tmp_path):
    """Compiling holds the translation notes in place of the logger's handlers (said once it compiles), and adds
    no frame between a caller and the stop value's warning (its location is the caller's line)."""
    import warnings

    seen = []

    class Collect(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    log = logging.getLogger('acframe')
    handler = Collect()
    log.addHandler(handler)
    try:
        compile_config(ding_file('cartpole_ppo_config.py'))
    finally:
        log.removeHandler(handler)
    assert sum('dizoo.' in m for m in seen) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        compile_config('acrobot_a2c.py', ['env.env_id=MountainCar-v0'])
    assert [w.filename for w in caught if 'stop_value' in str(w.message)] == [__file__]


@pytest.mark.parametrize('name, pipeline, as_list', [
    ('cartpole_impala_config.py', serial_pipeline, False),
    ('lunarlander_acer_config.py', serial_pipeline, True),
    ('cartpole_a2c_config.py', serial_pipeline_onpolicy, True),
    ('pendulum_ppo_config.py', serial_pipeline_onpolicy, True),
])
def test_a_ding_style_script_runs_with_only_the_import_changed(name, pipeline, as_list, tmp_path, monkeypatch):
    """``serial_pipeline([main_config, create_config], seed=0, max_env_step=...)`` as DI-engine's scripts call it."""
    monkeypatch.chdir(tmp_path)  # DI-engine scripts write ./<exp_name>
    namespace = runpy.run_path(ding_file(name))  # the file's module level (its __main__ block does not run)
    main_config, create_config = namespace['main_config'], namespace['create_config']
    pair = [main_config, create_config] if as_list else (main_config, create_config)
    policy = pipeline(pair, seed=0, max_env_step=600, progress=False, dynamic_seed=True, env_setting=None,
                      overrides=['env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.max_episode_steps=100',
                                 *SHORT_RUN.get(name, [])])
    assert policy.summary['env_steps'] >= 600
    # the user's dicts are not changed (DI-engine's scripts reuse them)
    assert create_config.env.type in DING_ENV_TYPES and create_config.env.import_names[0].startswith('dizoo.')


@pytest.mark.parametrize('pipeline', [serial_pipeline, serial_pipeline_onpolicy])
@pytest.mark.parametrize('arguments, message', [
    (dict(dynamic_seed=False), r"dynamic_seed=False \(every episode of an env from the same seed\) is not taken"),
    (dict(env_setting=[None, {}, {}]), r"env_setting \(DI-engine's env functions and configs\) is not taken"),
])
def test_di_engines_other_pipeline_arguments_are_one_line_before_anything_is_written(pipeline, arguments, message,
                                                                                     tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        pipeline(ding_pair('a2c'), seed=0, max_env_step=600, progress=False, **arguments)
    assert os.listdir(tmp_path) == []


def test_a_script_may_import_both_pipelines_from_acframe_entry():
    from acframe.entry import serial_pipeline as a, serial_pipeline_onpolicy as b
    assert a is serial_pipeline and b is serial_pipeline_onpolicy


# ---- aliases --------------------------------------------------------------------------------------------
def ding_pair(policy_type, env_type='cartpole', **sections):
    main = dict(env=dict(collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1), policy=dict(**sections))
    create = dict(env=dict(type=env_type, import_names=['dizoo.classic_control.cartpole.envs.cartpole_env']),
                  env_manager=dict(type='base'), policy=dict(type=policy_type))
    return main, create


@pytest.mark.parametrize('policy_type, sections, path, want', [
    ('a2c', dict(collect=dict(discount_factor=0.97)), 'policy.learn.discount_factor', 0.97),
    ('a2c', dict(collect=dict(gae_lambda=0.9)), 'policy.learn.gae_lambda', 0.9),
    ('a2c', dict(learn=dict(normalize_advantage=True)), 'policy.learn.adv_norm', True),
    ('a2c', dict(learn=dict(learning_rate_actor=0.002)), 'policy.learn.learning_rate', 0.002),
    ('a2c', dict(learn=dict(learning_rate_critic=0.004)), 'policy.learn.critic_learning_rate', 0.004),
    ('a2c', dict(learn=dict(grad_norm=0.7)), 'policy.learn.grad_clip_value', 0.7),
    ('a2c', dict(learn=dict(eps=1e-6)), 'policy.learn.adam_eps', 1e-6),
    ('a2c', dict(action_space='discrete'), 'policy.model.action_space', 'discrete'),
    ('acer', dict(unroll_len=8), 'policy.other.replay_buffer.unroll_len', 8),
    ('acer', dict(learn=dict(unroll_len=8)), 'policy.other.replay_buffer.unroll_len', 8),
    ('acer', dict(collect=dict(unroll_len=8)), 'policy.other.replay_buffer.unroll_len', 8),
    ('acer', dict(learn=dict(learning_rate_actor=0.003, learning_rate_critic=0.003)), 'policy.learn.learning_rate', 0.003),
    ('acer', dict(learn=dict(learning_rate_actor=0.0001, learning_rate_critic=0.0003)),
     'policy.learn.critic_learning_rate', 0.0003),
    ('acer', dict(learn=dict(trust_region_value=0.5)), 'policy.learn.trust_region_delta', 0.5),
    ('acer', dict(learn=dict(target_theta=0.01)), 'policy.learn.trust_region_alpha', 0.99),
    ('impala', dict(learn=dict(unroll_len=8)), 'policy.unroll_len', 8),
    ('impala', dict(collect=dict(unroll_len=8)), 'policy.unroll_len', 8),
    ('ppo', dict(learn=dict(learner=dict(hook=dict(save_ckpt_after_iter=100)))), 'policy.learn.learner.save_ckpt_freq', 100),
    ('a2c', dict(learn=dict(learner=dict(hook=dict(log_show_after_iter=20)))), 'policy.learn.learner.log_freq', 20),
])
def test_each_alias_sets_acframes_key(policy_type, sections, path, want):
    cfg = compile_config(ding_pair(policy_type, **sections))
    assert get(cfg, path) == pytest.approx(want) if isinstance(want, float) else get(cfg, path) == want


def test_di_engines_manager_step_timeout_is_the_watchdog_and_its_other_settings_are_unused(caplog):
    main, create = ding_pair('a2c')
    main['env']['manager'] = dict(shared_memory=False, step_timeout=10)
    assert compile_config((main, create)).env.step_timeout_s == 10.0
    assert 'env.manager' in next(m for m in warnings_of(caplog) if 'no use for' in m)


def test_unused_keys_with_an_acframe_counterpart_name_it_in_the_one_warning(caplog):
    compile_config(ding_pair('ppo', load_path='./ckpt_best.pth.tar',
                             learn=dict(resume_training=False, learner=dict(
                                 train_iterations=1000, hook=dict(load_ckpt_before_run='./x.pth',
                                                                  save_ckpt_after_run=True)))))
    (line,) = [m for m in warnings_of(caplog) if 'no use for' in m]
    assert 'for policy.load_path, policy.learn.learner.hook.load_ckpt_before_run: init_from (--init-from)' in line
    assert 'for policy.learn.learner.hook.save_ckpt_after_run: every run writes ckpt/ckpt_latest.pth' in line
    assert 'for policy.learn.resume_training: --resume RUN' in line
    assert 'for policy.learn.learner.train_iterations: max_train_iter (--max-train-iter)' in line


def test_unused_episode_and_stop_keys_name_what_acframe_reads_instead(caplog):
    """An episode collector, the evaluator's own stop value and episode count, a replay folder: ignored, each with the
    key or flag that does the job, one hint for keys that share it."""
    main, create = ding_pair('ppo', collect=dict(n_episode=8), eval=dict(evaluator=dict(stop_value=200, n_episode=5)))
    main['env']['replay_path'] = './video'
    create['collector'] = dict(type='episode')
    compile_config((main, create))
    (line,) = [m for m in warnings_of(caplog) if 'no use for' in m]
    assert ('for create_config.collector, policy.collect.n_episode: acframe collects policy.collect.n_sample '
            'transitions per collection, not episodes') in line
    assert 'for policy.eval.evaluator.stop_value: env.stop_value is the return a run stops at' in line
    assert 'for policy.eval.evaluator.n_episode: env.n_evaluator_episode' in line
    assert 'for env.replay_path: -m eval --video DIR' in line


def test_a_list_under_di_engines_learner_hook_is_a_typo_of_hooks_and_is_refused():
    """DI-engine's learner.hook is a dict of settings (dropped but for its two aliases); a list of hooks there is
    acframe's learner.hooks mistyped, which ran no hook while the warning called it a DI-engine key."""
    with pytest.raises(ConfigError, match=r"config key 'policy.learn.learner.hook' = \[\{'type': 'iter_log'\}\] is "
                                          r"a list, .* did you mean 'policy.learn.learner.hooks'\?"):
        compile_config(ding_pair('ppo', learn=dict(learner=dict(hook=[dict(type='iter_log')]))))


def test_gamma_under_collect_is_unused_for_off_policy_policies(caplog):
    """DI-engine's IMPALA reads learn.discount_factor only; its collect.discount_factor is not IMPALA's gamma."""
    cfg = compile_config(ding_pair('impala', learn=dict(discount_factor=0.9), collect=dict(discount_factor=0.5)))
    assert cfg.policy.learn.discount_factor == 0.9
    assert 'policy.collect.discount_factor' in next(m for m in warnings_of(caplog) if 'no use for' in m)


@pytest.mark.parametrize('sections, message', [
    (dict(collect=dict(gae_lambda=0.95), learn=dict(gae_lambda=0.9)),
     r"'policy.collect.gae_lambda' \(0.95\) and 'policy.learn.gae_lambda' \(0.9\) mean the same thing"),
    (dict(learn=dict(learning_rate=0.001, learning_rate_actor=0.002)), r"'policy.learn.learning_rate_actor'"),
    (dict(collect=dict(unroll_len=4)), r"policy 'a2c' does not declare it \(its train samples' length is its own\), so it takes only 1"),
    (dict(model=dict(actor_head_layer_num=-1)), r"actor_head_layer_num' = -1 must be a whole number >= 0"),
])
def test_contradicting_or_impossible_values_are_one_clear_error(sections, message):
    with pytest.raises(ConfigError, match=message):
        compile_config(ding_pair('a2c', **sections))


def test_acer_takes_different_actor_and_critic_rates():
    """DI-engine's ACER steps its actor and its critic with two optimizers: acframe's with two parameter groups."""
    cfg = compile_config(ding_pair('acer', learn=dict(learning_rate_actor=0.001, learning_rate_critic=0.002)))
    assert (cfg.policy.learn.learning_rate, cfg.policy.learn.critic_learning_rate) == (0.001, 0.002)


def test_a2c_takes_unroll_len_one_and_di_engine_head_keys(caplog):
    """DI-engine's head: layer_num hidden layers of *_head_hidden_size; 1 is acframe's size > 0, 0 its linear head."""
    cfg = compile_config(ding_pair('a2c', collect=dict(unroll_len=1),
                                   model=dict(critic_head_hidden_size=32, critic_head_layer_num=1,
                                              actor_head_hidden_size=32, actor_head_layer_num=0)))
    assert cfg.policy.model.critic_head_hidden_size == 32  # the same key in acframe's VAC
    assert cfg.policy.model.actor_head_hidden_size == 0 and 'actor_head_layer_num' not in cfg.policy.model
    assert not [m for m in warnings_of(caplog) if 'no use for' in m]


def test_a_di_engine_head_of_several_layers_is_built_as_deep():
    """DI-engine's Atari IMPALA and MuJoCo onppo files ask for 2-3 hidden layers per head: the vac model builds them."""
    import gymnasium as gym
    import torch

    from acframe.policy import create_policy

    cfg = compile_config(ding_pair('a2c', model=dict(actor_head_hidden_size=32, actor_head_layer_num=3,
                                                     critic_head_hidden_size=16, critic_head_layer_num=2)))
    assert (cfg.policy.model.actor_head_layer_num, cfg.policy.model.critic_head_layer_num) == (3, 2)
    model = create_policy(cfg, gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2)).model
    assert [m.out_features for m in model.actor_hidden if isinstance(m, torch.nn.Linear)] == [32, 32, 32]
    assert [m.out_features for m in model.critic_head if isinstance(m, torch.nn.Linear)] == [16, 16, 1]


def test_a_deeper_head_without_a_width_is_refused_not_built_linear():
    """DI-engine's heads are 64 wide by default, acframe's linear: ``actor_head_layer_num=2`` with no width would
    silently be a linear head; it is one line naming the width key (a DI file and acframe's own keys alike)."""
    import gymnasium as gym

    from acframe.policy import create_policy

    cfg = compile_config(ding_pair('a2c', model=dict(actor_head_layer_num=2)))
    with pytest.raises(ValueError, match=r"actor_head_layer_num = 2 needs policy.model.actor_head_hidden_size > 0"):
        create_policy(cfg, gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2))


def test_acers_linear_heads_make_di_engine_head_sizes_unused(caplog):
    cfg = compile_config(ding_pair('acer', model=dict(critic_head_hidden_size=64, actor_head_hidden_size=64)))
    assert 'critic_head_hidden_size' not in cfg.policy.model
    line = next(m for m in warnings_of(caplog) if 'no use for' in m)
    assert 'policy.model.critic_head_hidden_size' in line and 'policy.model.actor_head_hidden_size' in line


# ---- typos still fail -----------------------------------------------------------------------------------
@pytest.mark.parametrize('sections, message', [
    (dict(learn=dict(learning_rat=0.1)), "unknown config key 'policy.learn.learning_rat'; did you mean 'policy.learn.learning_rate'?"),
    (dict(nsteps=3), "unknown config key 'policy.nsteps'"),
    (dict(collect=dict(n_samples=16)), "did you mean 'policy.collect.n_sample'?"),
])
def test_a_typo_in_a_di_engine_file_is_still_an_error_with_the_nearest_key(sections, message):
    with pytest.raises(ConfigError, match=message.replace('(', r'\(').replace(')', r'\)').replace('?', r'\?')):
        compile_config(ding_pair('impala', **sections))


# ---- env -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize('env_type', sorted(DING_ENV_TYPES))
def test_di_engine_env_types_map_to_gymnasium_ids(env_type):
    cfg = compile_config(ding_pair('impala', env_type=env_type))
    assert cfg.env.type == 'gym' and cfg.env.env_id == DING_ENV_TYPES[env_type]
    assert DING_ENV_TYPES[env_type] in gym.registry


def test_an_env_id_in_the_file_wins_and_v2_box2d_ids_become_v3_with_a_note(caplog):
    main, create = ding_pair('impala', env_type='lunarlander')
    main['env']['env_id'] = 'LunarLanderContinuous-v2'
    cfg = compile_config((main, create))
    assert cfg.env.env_id == 'LunarLanderContinuous-v3'
    assert sum("'LunarLanderContinuous-v2' is gym's id" in m for m in warnings_of(caplog)) == 1


def test_an_unmapped_di_engine_env_type_is_an_error_not_cartpole():
    with pytest.raises(ConfigError, match=r"create_config.env.type 'procgen' is a DI-engine env that acframe does not map"):
        compile_config(ding_pair('impala', env_type='procgen'))


# ---- DI-engine's Atari, MuJoCo and BipedalWalker files (issue 47) ------------------------------------------
def atari_pair(policy_type='ppo', env_id='PongNoFrameskip-v4', frame_stack=4, **model):
    """The shape of DI-engine 0.5.3's dizoo/atari/config/serial/pong/pong_*_config.py."""
    main, create = ding_pair(policy_type, env_type='atari',
                             model=dict(obs_shape=[frame_stack, 84, 84], action_shape=6, **model))
    main['env'].update(env_id=env_id, frame_stack=frame_stack, stop_value=20)
    create['env']['import_names'] = ['dizoo.atari.envs.atari_env']
    return main, create


def test_a_di_engine_atari_file_is_the_ale_v5_game_with_its_deepmind_preprocessing(caplog):
    cfg = compile_config(atari_pair(frame_stack=3, encoder_hidden_size_list=[64, 64, 128]))
    assert cfg.env.type == 'gym' and cfg.env.env_id == 'ALE/Pong-v5'
    atari = cfg.env.atari
    # DI-engine's wrap_deepmind: NoopReset(30), MaxAndSkip(4), EpisodicLife and ClipReward in training, FireReset,
    # WarpFrame 84x84 grey, FrameStack(frame_stack); gym's NoFrameskip-v4 has no sticky actions
    assert (atari.enable, atari.frame_skip, atari.repeat_action_probability, atari.noop_max, atari.screen_size,
            atari.grayscale, atari.frame_stack, atari.episodic_life, atari.fire_reset, atari.clip_reward) == \
        (True, 4, 0.0, 30, 84, True, 3, True, True, True)
    assert 'frame_stack' not in cfg.env
    # DI-engine's ConvEncoder: 3 conv layers of the Nature CNN's shape, then a linear layer of the last size
    assert (cfg.policy.model.encoder, cfg.policy.model.encoder_channels, cfg.policy.model.encoder_hidden_size_list) == \
        ('nature_cnn', [64, 64, 128], [128])
    notes = warnings_of(caplog)
    assert sum("'PongNoFrameskip-v4' (DI-engine's atari env) is 'ALE/Pong-v5'" in m for m in notes) == 1
    assert sum("DI-engine's conv encoder" in m for m in notes) == 1
    assert all('\n' not in m for m in notes)


def test_a_di_engine_atari_model_builds_on_the_env_acframe_makes():
    pytest.importorskip('ale_py')
    policy = build(compile_config(atari_pair(encoder_hidden_size_list=[32, 64, 64, 128])))
    assert policy.model is not None  # obs_shape [4, 84, 84] and action_shape 6 fit ALE/Pong-v5 through env.atari


def test_gym_v0_atari_ids_keep_their_sticky_actions_and_acframe_keys_under_env_atari_win():
    main, create = atari_pair(env_id='QbertNoFrameskip-v0')
    main['env']['atari'] = dict(noop_max=10)
    cfg = compile_config((main, create))
    assert cfg.env.env_id == 'ALE/Qbert-v5' and cfg.env.atari.repeat_action_probability == 0.25
    assert cfg.env.atari.noop_max == 10


@pytest.mark.parametrize('env_id, frame_stack, model, message', [
    ('ALE/Pong-v5', 4, {}, r"env.env_id 'ALE/Pong-v5' with create_config.env.type='atari': acframe maps DI-engine's "
                           r"'<Game>NoFrameskip-v4' ids"),
    ('PongDeterministic-v4', 4, {}, r"'<Game>NoFrameskip-v4'"),
    ('PongNoFrameskip-v4', 0, {}, r"'env.frame_stack' = 0 must be an int >= 1"),
    ('PongNoFrameskip-v4', 4, dict(encoder_hidden_size_list=[32, 64, 64, 64, 128]),
     r"'policy.model.encoder_hidden_size_list' = \[32, 64, 64, 64, 128\]: for image observations DI-engine builds"),
])
def test_what_acframe_cannot_take_from_an_atari_file_is_one_line(env_id, frame_stack, model, message):
    with pytest.raises(ConfigError, match=message) as info:
        compile_config(atari_pair(env_id=env_id, frame_stack=frame_stack, **model))
    assert '\n' not in str(info.value)


def mujoco_pair(env_id='HalfCheetah-v3', **model):
    """The shape of DI-engine 0.5.3's dizoo/mujoco/config/*_onppo_config.py."""
    main, create = ding_pair('ppo', env_type='mujoco', model=dict(action_space='continuous', **model))
    main['env'].update(env_id=env_id, norm_obs=dict(use_norm=False), norm_reward=dict(use_norm=False))
    create['env']['import_names'] = ['dizoo.mujoco.envs.mujoco_env']
    return main, create


def test_a_di_engine_mujoco_file_runs_gymnasiums_v5_task_with_a_note(caplog):
    cfg = compile_config(mujoco_pair(obs_shape=17, action_shape=6))
    assert cfg.env.type == 'gym' and cfg.env.env_id == 'HalfCheetah-v5' and cfg.policy.model.obs_shape == 17
    assert sum("'HalfCheetah-v3' is gym's (mujoco-py); gymnasium 1.x has 'HalfCheetah-v5'" in m
               for m in warnings_of(caplog)) == 1
    assert 'env.norm_obs' in next(m for m in warnings_of(caplog) if 'no use for' in m)


def test_a_v3_obs_shape_that_v5_changed_is_left_to_the_env_with_a_note(caplog):
    cfg = compile_config(mujoco_pair('Ant-v3', obs_shape=111, action_shape=8))
    assert cfg.env.env_id == 'Ant-v5' and 'obs_shape' not in cfg.policy.model  # filled from the env
    assert any("policy.model.obs_shape=111 is Ant-v3's; Ant-v5 observes 105 values" in m for m in warnings_of(caplog))


def test_the_v5_ant_observes_what_the_note_says():
    pytest.importorskip('mujoco')
    env = gym.make('Ant-v5')
    try:
        assert env.observation_space.shape == (105,)
    finally:
        env.close()


def test_a_mujoco_id_acframe_does_not_know_is_one_line():
    with pytest.raises(ConfigError, match=r"env.env_id 'Hoppr-v3' with create_config.env.type='mujoco'"):
        compile_config(mujoco_pair('Hoppr-v3'))


def test_a_di_engine_bipedalwalker_file_accepts_rew_clip_with_a_note(caplog):
    main, create = ding_pair('ppo', env_type='bipedalwalker', model=dict(obs_shape=24, action_shape=4,
                                                                       action_space='continuous'))
    main['env'].update(env_id='BipedalWalker-v3', act_scale=True, rew_clip=True)
    cfg = compile_config((main, create))
    assert cfg.env.env_id == 'BipedalWalker-v3' and 'rew_clip' not in cfg.env
    notes = warnings_of(caplog)
    assert sum('env.rew_clip=True' in m and 'not applied' in m for m in notes) == 1
    assert 'env.rew_clip' in next(m for m in notes if 'no use for' in m)


def test_a_torch_nn_activation_is_read_as_its_name_and_saved_as_data(caplog, tmp_path):
    import torch.nn as nn

    from acframe.config import save_config
    for given, want in ((nn.Tanh(), 'tanh'), (nn.ReLU, 'relu'), (nn.ELU(), 'elu')):
        cfg = compile_config(ding_pair('ppo', env_type='pendulum', model=dict(activation=given)))
        assert cfg.policy.model.activation == want
    assert any("policy.model.activation = torch.nn Tanh() is read as 'tanh'" in m for m in warnings_of(caplog))
    save_config(cfg, str(tmp_path / 'config.py'))
    assert "'elu'" in (tmp_path / 'config.py').read_text()
    assert build(cfg).model is not None


@pytest.mark.parametrize('activation', ['GELU()', 'ELU(alpha=0.5)', 'LeakyReLU'])
def test_a_torch_nn_activation_acframe_does_not_have_is_one_line(activation):
    import torch.nn as nn
    given = eval(f'nn.{activation}')
    with pytest.raises(ConfigError, match=r"config key 'policy.model.activation' = torch.nn .*: acframe's models take "
                                          r"'tanh', 'relu', 'elu'") as info:
        compile_config(ding_pair('ppo', model=dict(activation=given)))
    assert '\n' not in str(info.value)


def test_sliced_of_di_engines_impala_buffer_is_accepted_with_the_unused_keys(caplog):
    cfg = compile_config(ding_pair('impala', env_type='lunarlander',
                                   other=dict(replay_buffer=dict(replay_buffer_size=1000, sliced=True))))
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 1000 and 'sliced' not in cfg.policy.other.replay_buffer
    assert 'policy.other.replay_buffer.sliced' in next(m for m in warnings_of(caplog) if 'no use for' in m)


@pytest.mark.parametrize('sections', [dict(multi_gpu=True), dict(learn=dict(multi_gpu=True))])
def test_multi_gpu_true_without_the_number_of_ranks_is_refused_naming_the_key_that_gives_it(sections):
    key = 'policy.multi_gpu' if 'multi_gpu' in sections else 'policy.learn.multi_gpu'
    with pytest.raises(ConfigError, match=rf"config key '{key}' = True asks for DI-engine's data-parallel learners, "
                                          rf"whose number its launcher sets \(--nproc_per_node\); give it as "
                                          rf"parallel.learner_num=N .* or set {key}=False for one learner") as info:
        compile_config(ding_pair('ppo', **sections))
    assert '\n' not in str(info.value)


@pytest.mark.parametrize('ranks', [1, 2])
def test_multi_gpu_true_with_the_number_of_ranks_runs_them_with_the_files_per_rank_batches_times_n(ranks, caplog):
    """DI-engine's DDP files count batches per rank (each of its N processes collects and learns on them); acframe's
    keys are the whole run's: N times."""
    main, create = ding_pair('ppo', multi_gpu=True, learn=dict(batch_size=64), collect=dict(n_sample=256))
    main['env']['collector_env_num'] = 8
    cfg = compile_config((main, create), overrides=[f'parallel.learner_num={ranks}'])
    assert 'multi_gpu' not in cfg.policy and cfg.parallel.learner_num == ranks
    assert (cfg.env.collector_env_num, cfg.policy.collect.n_sample, cfg.policy.learn.batch_size) == \
        (8 * ranks, 256 * ranks, 64 * ranks)
    note = next(m for m in warnings_of(caplog) if 'multi_gpu=True with parallel.learner_num' in m)
    assert f'batch_size 64 -> {64 * ranks}' in note


def test_multi_gpu_false_is_accepted_with_the_unused_keys(caplog):
    cfg = compile_config(ding_pair('ppo', multi_gpu=False))
    assert 'multi_gpu' not in cfg.policy
    assert 'policy.multi_gpu' in next(m for m in warnings_of(caplog) if 'no use for' in m)


def test_cuda_true_in_a_di_engine_atari_file_falls_back_to_the_cpu(caplog):
    import torch
    if torch.cuda.is_available():
        pytest.skip('CUDA is available here: the file keeps cuda=True')
    main, create = atari_pair()
    main['policy']['cuda'] = True
    assert compile_config((main, create)).policy.cuda is False


def test_non_dizoo_import_names_are_still_imported():
    main, create = ding_pair('impala')
    create['env']['import_names'].append('no_such_module_xyz')
    with pytest.raises(Exception, match=r"cannot import module 'no_such_module_xyz'"):
        compile_config((main, create))


def test_a_buffer_module_named_in_create_configs_replay_buffer_section_is_imported(tmp_path, monkeypatch):
    """DI-engine's place for a user buffer's module, create_config.replay_buffer.import_names, is imported as
    import_names (it was dropped: the buffer was unknown, a misspelled module passed without a word)."""
    import copy

    from acframe import BUFFER_REGISTRY
    from dizoo_configs.cartpole_impala import create_config, main_config

    (tmp_path / 'user_rb_buffers.py').write_text(
        "from acframe import BUFFER_REGISTRY\nfrom acframe.data.buffer import ReplayBuffer\n\n\n"
        "@BUFFER_REGISTRY.register('user_rb')\nclass UserRB(ReplayBuffer):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    create = copy.deepcopy(dict(create_config))
    create['replay_buffer'] = dict(type='user_rb', import_names=['user_rb_buffers'])
    try:
        cfg = compile_config((copy.deepcopy(dict(main_config)), create))
        assert cfg.policy.other.replay_buffer.type == 'user_rb' and 'user_rb_buffers' in cfg.import_names
        create['replay_buffer'] = dict(type='naive', import_names=['no_such_buffer_module_xyz'])
        with pytest.raises(Exception, match=r"cannot import module 'no_such_buffer_module_xyz'"):
            compile_config((copy.deepcopy(dict(main_config)), create))
    finally:
        BUFFER_REGISTRY._entries.pop('user_rb', None)
        sys.modules.pop('user_rb_buffers', None)


@pytest.mark.parametrize('section', ['policy', 'env_manager'])
def test_a_policy_module_named_in_create_configs_policy_or_env_manager_section_is_imported(tmp_path, monkeypatch,
                                                                                           section, caplog):
    """DI-engine lists a user policy's module under create_config.policy.import_names (its ding.* ones are
    DI-engine's own: not imported, one note)."""
    name = f'user_rfb_{section}'
    (tmp_path / f'{name}.py').write_text(
        "from acframe import POLICY_REGISTRY\nfrom acframe.policy.a2c import A2CPolicy\n\n\n"
        f"@POLICY_REGISTRY.register('{name}')\nclass RFB(A2CPolicy):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    create = dict(env=dict(type='cartpole'), policy=dict(type=name), env_manager=dict(type='base'))
    create[section]['import_names'] = [name, f"ding.{'policy.a2c' if section == 'policy' else 'envs.env_manager'}"]
    try:
        with caplog.at_level(logging.WARNING, logger='acframe'):
            cfg = compile_config((dict(env=dict(collector_env_num=4)), create))
        assert cfg.policy.type == name and cfg.import_names == [name]
        assert "DI-engine's ding." in caplog.text and 'not imported: acframe has its own policies' in caplog.text
    finally:
        POLICY_REGISTRY._entries.pop(name, None)
        sys.modules.pop(name, None)


# ---- the model keys of a file must fit the env -------------------------------------------------------------
def build(cfg):
    env = make_env_manager(cfg, 'evaluator', 1, 0)
    try:
        return create_policy(cfg, env.observation_space, env.action_space)
    finally:
        env.close()


@pytest.mark.parametrize('model, message', [
    (dict(obs_shape=8, action_shape=4), r"policy.model.obs_shape = 8 does not fit env 'CartPole-v1', which has observations of shape \(4,\)"),
    (dict(obs_shape=4, action_shape=3), r"policy.model.action_shape = 3 does not fit env 'CartPole-v1'"),
    (dict(action_space='continuous'), r"policy.model.action_space = 'continuous' does not fit env 'CartPole-v1', which has discrete actions"),
])
def test_model_keys_that_do_not_fit_the_env_are_named(model, message):
    cfg = compile_config(ding_pair('impala', model=model))
    with pytest.raises(ConfigError, match=message):
        build(cfg)


def test_model_keys_that_fit_pass_in_di_engines_list_form_too():
    policy = build(compile_config(ding_pair('impala', model=dict(obs_shape=[4], action_shape=2))))
    assert policy.model is not None


def test_a_lunarlander_model_on_the_default_env_is_refused():
    """No env_id and an unknown-to-acframe env: the LunarLander model must not silently train on CartPole."""
    main = dict(policy=dict(model=dict(obs_shape=8, action_shape=4)))
    cfg = compile_config((main, dict(policy=dict(type='impala'))))
    with pytest.raises(ConfigError, match=r"obs_shape = 8 does not fit env 'CartPole-v1'"):
        build(cfg)


GOAL_ENV = "Dict observations {'image': [1, 8, 8], 'target': 2}"


@pytest.mark.parametrize('obs_shape', [{'image': [1, 8, 8], 'target': 3}, {'image': [2, 8, 8], 'target': 2},
                                       {'image': [1, 8, 8]}, [1, 8, 8], 2])
def test_a_model_obs_shape_that_does_not_fit_a_dict_observation_is_one_clear_line(obs_shape):
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=1, evaluator_env_num=1),
                policy=dict(model=dict(obs_shape=obs_shape, encoder='impala_resnet')))
    cfg = compile_config((main, dict(env=dict(type='toy_pixel_goal'), policy=dict(type='impala'))))
    with pytest.raises(ConfigError) as info:
        build(cfg)
    message = str(info.value)
    assert '\n' not in message
    assert message.startswith(f"policy.model.obs_shape = {obs_shape!r} does not fit env 'toy_pixel_goal', which has {GOAL_ENV}; "
                              f"set policy.model.obs_shape = {{'image': [1, 8, 8], 'target': 2}}")


def test_a_model_obs_shape_that_fits_a_dict_observation_passes():
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=1, evaluator_env_num=1),
                policy=dict(model=dict(obs_shape={'image': (1, 8, 8), 'target': [2]}, encoder='impala_resnet',
                                       encoder_channels=[4])))
    assert build(compile_config((main, dict(env=dict(type='toy_pixel_goal'), policy=dict(type='impala'))))).model


def test_cuda_true_in_a_di_engine_file_falls_back_to_the_cpu_with_a_note(caplog):
    import torch
    if torch.cuda.is_available():
        pytest.skip('CUDA is available here: the file keeps cuda=True')
    cfg = compile_config(ding_file('lunarlander_impala_config.py'))
    assert cfg.policy.cuda is False
    assert any('policy.cuda=True but CUDA is not available' in m for m in warnings_of(caplog))
    caplog.clear()  # the command line's policy.cuda decides: no note about the file's
    cfg = compile_config(ding_file('lunarlander_impala_config.py'), ['policy.cuda=False'])
    assert cfg.policy.cuda is False and not any('CUDA is not available' in m for m in warnings_of(caplog))


def test_junk_in_di_engine_positions_is_a_config_error_never_a_crash():
    """Random junk where DI-engine's keys go (150 seeded cases): an AcframeError or a valid config, nothing else."""
    import random

    from acframe.errors import AcframeError
    logging.getLogger('acframe').disabled = True
    try:
        junk = [None, 5, 'x', [1], {'a': 1}, 1.5, True, (1, 2), 'naive', 'cartpole', 'LunarLander-v2', -3]
        paths = ['policy', 'policy.learn', 'policy.collect', 'policy.model', 'env', 'env.manager', 'policy.other.replay_buffer',
                 'policy.collect.unroll_len', 'policy.learn.learning_rate_actor', 'policy.action_space', 'env.env_id',
                 'import_names', 'policy.learn.target_theta', 'policy.collect.gae_lambda', 'policy.unroll_len',
                 'policy.model.actor_head_layer_num', 'policy.other.replay_buffer.type', 'policy.cuda']
        create_paths = ['env', 'env.type', 'env.import_names', 'replay_buffer', 'replay_buffer.type', 'import_names', 'collector']
        rng = random.Random(0)
        for _ in range(150):
            main, create = ding_pair(rng.choice(['a2c', 'impala', 'acer']), learn=dict(learning_rate_actor=0.001))
            for _ in range(rng.randint(1, 3)):
                tree, path = (main, rng.choice(paths)) if rng.random() < 0.6 else (create, rng.choice(create_paths))
                *parents, last = path.split('.')
                for part in parents:
                    tree = tree.setdefault(part, {}) if isinstance(tree.get(part), dict) else tree.__setitem__(part, {}) or tree[part]
                tree[last] = rng.choice(junk)
            try:
                compile_config((main, create))
            except AcframeError:
                pass
    finally:
        logging.getLogger('acframe').disabled = False


def test_a_compiled_config_is_not_translated_again():
    """Pipelines recompile a compiled config: an env_id given as an acframe override stays what it says."""
    cfg = compile_config('cartpole_impala.py', ['env.env_id=LunarLander-v2'])
    assert compile_config(cfg).env.env_id == 'LunarLander-v2'  # gymnasium then says it does not exist


@pytest.mark.parametrize('flag, encoder', [(True, 'impala_resnet'), (False, 'mlp')])
def test_ding_impala_cnn_encoder_switch_chooses_acframes_encoder(flag, encoder):
    main = dict(env=dict(env_id='toy_pixel_dot'), policy=dict(model=dict(impala_cnn_encoder=flag)))
    cfg = compile_config((main, dict(env=dict(type='toy_pixel_dot'), policy=dict(type='impala'))))
    assert cfg.policy.model.encoder == encoder and 'impala_cnn_encoder' not in cfg.policy.model


def test_the_encoder_key_is_acframes_own_and_kept():
    main = dict(policy=dict(model=dict(encoder='nature_cnn')))
    assert compile_config((main, dict(policy=dict(type='a2c')))).policy.model.encoder == 'nature_cnn'


# ---- renamed keys and policy.on_policy ----------------------------------------------------------------
@pytest.mark.parametrize('policy_type', ['impala', 'a2c', 'acer', 'ppo'])
def test_the_former_clip_value_sets_grad_clip_value_with_a_warning(policy_type):
    main = dict(policy=dict(learn=dict(clip_value=3.0)))
    with pytest.warns(ConfigWarning, match=r"'policy.learn.clip_value' is read as 'policy.learn.grad_clip_value'"):
        cfg = compile_config((main, dict(policy=dict(type=policy_type))))
    assert cfg.policy.learn.grad_clip_value == 3.0 and 'clip_value' not in cfg.policy.learn
    with pytest.warns(ConfigWarning, match='rename it'):
        cfg = compile_config((dict(), dict(policy=dict(type=policy_type))), ['policy.learn.clip_value=2.5'])
    assert cfg.policy.learn.grad_clip_value == 2.5


def test_the_former_and_the_new_clip_name_must_agree():
    main = dict(policy=dict(learn=dict(clip_value=3.0, grad_clip_value=1.0)))
    with pytest.raises(ConfigError, match=r"'policy.learn.clip_value' \(3.0, its former name\) and "
                                          r"'policy.learn.grad_clip_value' \(1.0\) differ"):
        compile_config((main, dict(policy=dict(type='a2c'))))


@pytest.mark.parametrize('policy_type, value', [('a2c', False), ('ppo', False), ('impala', True), ('acer', True)])
def test_policy_on_policy_that_contradicts_the_policy_is_an_error(policy_type, value):
    pair = (dict(policy=dict(on_policy=value)), dict(policy=dict(type=policy_type)))
    with pytest.raises(ConfigError, match=rf"'policy.on_policy' = {value}, but policy '{policy_type}' learns "
                                          rf"{'on' if not value else 'off'}-policy"):
        compile_config(pair)
    with pytest.raises(ConfigError, match=r"remove policy.on_policy"):
        compile_config((dict(), dict(policy=dict(type=policy_type))), [f'policy.on_policy={value}'])


@pytest.mark.parametrize('policy_type, value', [('a2c', True), ('ppo', True), ('impala', False), ('acer', False)])
def test_policy_on_policy_that_agrees_is_accepted_and_dropped(policy_type, value):
    cfg = compile_config((dict(policy=dict(on_policy=value)), dict(policy=dict(type=policy_type))),
                         [f'policy.on_policy={value}'])
    assert 'on_policy' not in cfg.policy  # the policy class says it (Policy.on_policy); the config does not


def test_di_engines_ppo_lr_scheduler_is_acframes_linear_decay_in_gradient_steps(caplog):
    cfg = compile_config(ding_pair('ppo', learn=dict(epoch_per_collect=10, batch_size=128,
                                                     lr_scheduler=dict(epoch_num=1500, min_lr_lambda=0)),
                                   collect=dict(n_sample=3200)))
    assert cfg.policy.learn.lr_decay_iters == 1500 * 10 * 25 and 'lr_scheduler' not in cfg.policy.learn
    assert any('policy.learn.lr_decay_iters=375000 (10 epochs x 25 minibatches per collection)' in m
               for m in warnings_of(caplog))
    assert compile_config(ding_pair('ppo', learn=dict(lr_scheduler=None))).policy.learn.lr_decay_iters == 0


@pytest.mark.parametrize('scheduler, message', [
    (dict(epoch_num=100, min_lr_lambda=0.1), r"'policy.learn.lr_scheduler.min_lr_lambda' = 0.1: acframe decays the "
                                             r"learning rate to 0"),
    (dict(epochs=100), r"'policy.learn.lr_scheduler' = \{'epochs': 100\} must be dict\(epoch_num=N, min_lr_lambda=0\)"),
])
def test_an_lr_scheduler_acframe_cannot_follow_is_one_line(scheduler, message):
    with pytest.raises(ConfigError, match=message):
        compile_config(ding_pair('ppo', learn=dict(lr_scheduler=scheduler)))


def test_a_di_engine_exp_name_path_becomes_its_last_part_with_a_note(caplog):
    main, create = ding_pair('impala')
    main['exp_name'] = 'impala_log/lunarlander_impala_seed0'
    assert compile_config((main, create)).exp_name == 'lunarlander_impala_seed0'
    assert any('--exp-dir impala_log/lunarlander_impala_seed0' in m for m in warnings_of(caplog))


@pytest.mark.parametrize('where', ['create', 'main'])
def test_di_engines_reward_models_are_refused_in_one_line(where):
    main, create = ding_pair('ppo')
    (create if where == 'create' else main)['reward_model'] = dict(type='trex', min_snippet_length=30)
    with pytest.raises(ConfigError, match=r"\(type 'trex'\) is one of DI-engine's reward models .* which acframe does "
                                          r"not have; remove reward_model"):
        compile_config((main, create))


def test_the_unmapped_env_type_line_lists_atari_and_mujoco_too():
    with pytest.raises(ConfigError, match=r"\(it maps cartpole, .*, mountain_car, atari, mujoco\)"):
        compile_config(ding_pair('ppo', env_type='rocket'))


@pytest.mark.parametrize('key, fix', [('norm_obs', 'policy.model.obs_norm=True'),
                                      ('norm_reward', 'policy.learn.reward_norm=True')])
def test_di_engines_env_normalization_on_is_refused_naming_acframes_key(key, fix):
    main, create = mujoco_pair()
    main['env'][key] = dict(use_norm=True)
    with pytest.raises(ConfigError, match=rf"'env.{key}.use_norm' = True is DI-engine's env wrapper; .*set "
                                          rf"{re.escape(fix)}"):
        compile_config((main, create))


def test_a_di_engine_atari_ppo_file_runs_under_the_cli_and_its_run_folder_holds_data(tmp_path, capsys):
    """A tiny run of a DI-engine-shaped Pong PPO file (cuda=True, activation=nn.ReLU()): the ALE env, the conv
    model and the learner are built from it, and the run folder's config holds the activation's name."""
    pytest.importorskip('ale_py')
    import torch.nn as nn
    main, create = atari_pair(encoder_hidden_size_list=[16, 16, 32], activation=nn.ReLU())
    main['policy'].update(cuda=True, recompute_adv=True, action_space='discrete',
                          learn=dict(epoch_per_collect=1, batch_size=8, value_norm=True),
                          collect=dict(n_sample=16, unroll_len=1, discount_factor=0.99, gae_lambda=0.95))
    path = tmp_path / 'pong_ppo_config.py'
    path.write_text('from easydict import EasyDict\nimport torch.nn as nn\n'
                    f'main_config = EasyDict({main!r})\ncreate_config = EasyDict({create!r})\n'.replace('ReLU()', 'nn.ReLU()'))
    exp_dir = tmp_path / 'run'
    code = cli_main(['-c', str(path), '--env-step', '16', '--exp-dir', str(exp_dir), '-q', 'env.max_episode_steps=50'])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((exp_dir / 'summary.json').read_text())
    assert summary['env_steps'] >= 16 and summary['train_iters'] >= 1
    saved = json.loads((exp_dir / 'config.json').read_text())['config']
    assert saved['env']['env_id'] == 'ALE/Pong-v5' and saved['policy']['model']['activation'] == 'relu'


def test_a_di_engine_mujoco_ppo_file_runs_under_the_cli(tmp_path, capsys):
    pytest.importorskip('mujoco')
    main, create = mujoco_pair('Hopper-v3', obs_shape=11, action_shape=3, encoder_hidden_size_list=[16, 16])
    main['policy'].update(learn=dict(epoch_per_collect=1, batch_size=8, lr_scheduler=dict(epoch_num=10, min_lr_lambda=0)),
                          collect=dict(n_sample=16, unroll_len=1))
    code = cli_main(['-c', str(write_config(tmp_path, main, create)), '--env-step', '16', '--exp-dir',
                     str(tmp_path / 'run'), '-q', 'env.max_episode_steps=50'])
    assert code == 0, capsys.readouterr().err
    saved = json.loads((tmp_path / 'run' / 'config.json').read_text())['config']
    assert saved['env']['env_id'] == 'Hopper-v5' and saved['policy']['learn']['lr_decay_iters'] == 10 * 1 * 2


def write_config(folder, main, create):
    path = folder / 'ding_config.py'
    path.write_text(f'main_config = {main!r}\ncreate_config = {create!r}\n')
    return path


def test_a_dizoo_file_s_n_sample_is_rounded_up_to_a_multiple_of_its_collector_envs(tmp_path, caplog):
    """DI-engine collects n_sample in all, however many envs; its MuJoCo onppo files also repeat collector_env_num
    under policy.collect: 2048 samples over 10 envs become 2050, with a note."""
    path = tmp_path / 'dizoo' / 'mujoco' / 'config' / 'hopper_onppo_config.py'
    path.parent.mkdir(parents=True)
    path.write_text(
        "from easydict import EasyDict\n"
        "main_config = EasyDict(dict(exp_name='hopper_onppo_seed0',\n"
        "    env=dict(env_id='CartPole-v1', collector_env_num=10, evaluator_env_num=1, n_evaluator_episode=1),\n"
        "    policy=dict(collect=dict(n_sample=2048, collector_env_num=10))))\n"
        "create_config = EasyDict(dict(env=dict(type='cartpole', import_names=['dizoo.classic_control.cartpole.envs']),\n"
        "    env_manager=dict(type='base'), policy=dict(type='ppo')))\n")
    cfg = compile_config(str(path))
    assert cfg.policy.collect.n_sample == 2050 and cfg.env.collector_env_num == 10
    assert any('2050 samples are collected each time' in m for m in warnings_of(caplog))


@pytest.mark.parametrize('where', ['file', 'override'])
def test_a_refused_config_says_its_error_alone_without_the_renamed_keys_warning(where):
    pair = (dict(policy=dict(learn=dict(learning_rate=-1.0))), dict(policy=dict(type='ppo')))
    overrides = ['policy.learn.clip_value=0.5']
    if where == 'file':
        pair[0]['policy']['learn']['clip_value'] = 0.5
        overrides = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with pytest.raises(ConfigError, match=r"'policy.learn.learning_rate' = -1.0 must be > 0"):
            compile_config(pair, overrides)
    assert [str(w.message) for w in caught] == []
    pair[0]['policy']['learn']['learning_rate'] = 1e-3
    with warnings.catch_warnings(record=True) as caught:  # the same config once it compiles: the warning, once,
        warnings.simplefilter('always')  # at the caller's line
        compile_config(pair, overrides)
    renamed = [w for w in caught if 'is read as' in str(w.message)]
    assert len(renamed) == 1 and renamed[0].filename == __file__, [(str(w.message), w.filename) for w in caught]


def test_an_error_about_a_key_the_file_wrote_under_di_engines_name_names_that_key():
    main = dict(env=dict(collector_env_num=4), policy=dict(learn=dict(unroll_len=16), collect=dict(unroll_len=8)))
    with pytest.raises(ConfigError, match=r"'policy.collect.unroll_len' \(8\) and 'policy.unroll_len' \(16\) mean the "
                                          r"same thing .* \(policy.unroll_len is the file's policy.learn.unroll_len\)$"):
        compile_config((main, dict(env=dict(type='cartpole'), policy=dict(type='impala'))))


def test_the_warning_names_only_what_was_left_unread_of_a_di_engine_section(caplog):
    """env.manager's step_timeout and the learner hook's two settings are read: the warning named the whole
    sections as ignored."""
    main, create = ding_pair('a2c', learn=dict(learner=dict(hook=dict(save_ckpt_after_iter=100,
                                                                      log_show_after_iter=20))))
    main['env']['manager'] = dict(step_timeout=30, max_retry=2, shared_memory=False)
    cfg = compile_config((main, create))
    assert cfg.env.step_timeout_s == 30.0 and cfg.policy.learn.learner.save_ckpt_freq == 100
    assert cfg.policy.learn.learner.log_freq == 20
    line = next(m for m in warnings_of(caplog) if 'no use for' in m)
    assert 'ignored: env.manager.max_retry, env.manager.shared_memory (' in line, line
    assert 'step_timeout' not in line and 'learner' not in line


class OnPolicyOfMyOwn(POLICY_REGISTRY.get('a2c')):
    """An on-policy policy of a user's (A2C's keys): DI-engine's collect-time gamma and lambda are its learn keys."""


def test_di_engines_collect_time_gamma_and_lambda_reach_an_on_policy_policy_of_ones_own():
    POLICY_REGISTRY.register('my_onpolicy_ding_test', OnPolicyOfMyOwn)
    try:
        cfg = compile_config(ding_pair('my_onpolicy_ding_test', collect=dict(discount_factor=0.9, gae_lambda=0.8)))
    finally:
        POLICY_REGISTRY._entries.pop('my_onpolicy_ding_test', None)
    assert cfg.policy.learn.discount_factor == 0.9 and cfg.policy.learn.gae_lambda == 0.8


@pytest.mark.parametrize('buffer', ['naive', 'advanced', 'deque'])
def test_di_engines_fifo_buffer_types_are_the_policys_own_buffer(buffer):
    main, create = ding_pair('impala')
    create['replay_buffer'] = dict(type=buffer)
    assert compile_config((main, create)).policy.other.replay_buffer.type == 'fifo'
