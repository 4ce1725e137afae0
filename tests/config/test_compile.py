"""Specification of ``acframe.config.compile``: merging, validation messages, saving and staying torch-free."""
import subprocess
import sys
import textwrap
import warnings

import pytest

from acframe.config import compile_config, load_config_file, save_config
from acframe.config.compile import config_comments, parse_override, resolve_config_path
from acframe.errors import ConfigError, ConfigWarning, RegistryError

CREATE = dict(policy=dict(type='impala'))


def compile_main(main, overrides=None, create=CREATE, **kwargs):
    return compile_config((main, create), overrides, **kwargs)


# ---- merge order ----------------------------------------------------------------------------------
def test_defaults_then_file_then_overrides():
    main = dict(policy=dict(learn=dict(learning_rate=0.01, batch_size=8)), env=dict(env_id='CartPole-v0'))
    cfg = compile_main(main, ['policy.learn.learning_rate=0.02'])
    assert cfg.policy.learn.learning_rate == 0.02       # override beats the file
    assert cfg.policy.learn.batch_size == 8             # the file beats the default
    assert cfg.env.env_id == 'CartPole-v0'
    assert cfg.policy.learn.lambda_ == 1.0              # IMPALA's own default
    assert cfg.policy.learn.learner.log_freq == 50      # a default common to every policy
    assert cfg.env.collector_env_num == 8               # an env default


def test_seed_argument_and_tuple_overrides():
    cfg = compile_main(dict(seed=3), [('max_env_step', 1000)], seed=7)
    assert cfg.seed == 7
    assert cfg.max_env_step == 1000


def test_override_values_are_parsed_as_python_literals():
    assert parse_override('policy.learn.learning_rate=3e-4') == ('policy.learn.learning_rate', 3e-4)
    assert parse_override('env.stop_value=None') == ('env.stop_value', None)
    assert parse_override('policy.cuda=false') == ('policy.cuda', False)
    assert parse_override('policy.model.encoder_hidden_size_list=[32, 32]') == \
        ('policy.model.encoder_hidden_size_list', [32, 32])
    assert parse_override('env.env_id=CartPole-v0') == ('env.env_id', 'CartPole-v0')
    # infinity as the config reference writes ranges ([-inf, inf]); NaN stays text (refused by the key's rule)
    assert parse_override('env.stop_value=inf') == ('env.stop_value', float('inf'))
    assert parse_override('env.stop_value=-inf') == ('env.stop_value', float('-inf'))
    assert compile_config('cartpole_ppo.py', ['env.stop_value=inf']).env.stop_value == float('inf')
    # dict(...) as the config files write it, nested too; no other call is evaluated (the text stays a string)
    assert parse_override("policy.learn.learner.hooks=[dict(type='linear_lr_decay', decay_iters=10)]") == \
        ('policy.learn.learner.hooks', [{'type': 'linear_lr_decay', 'decay_iters': 10}])
    assert parse_override("k=dict(a=dict(b=[1, 2]))") == ('k', {'a': {'b': [1, 2]}})
    for text in ("k=dict(**other)", "k=__import__('os').getcwd()", "k=list((1, 2))"):
        assert parse_override(text) == ('k', text[2:])


def test_free_form_mappings_accept_any_key():
    cfg = compile_main(dict(policy=dict(model=dict(encoder_hidden_size_list=[32])), env=dict(env_kwargs=dict(g=9.8))),
                       ['policy.model.share_encoder=False'])
    assert cfg.policy.model.encoder_hidden_size_list == [32]
    assert cfg.policy.model.share_encoder is False
    assert cfg.env.env_kwargs.g == 9.8


def test_create_config_types_are_copied_in():
    create = dict(policy=dict(type='impala'), env=dict(type='gym'), env_manager=dict(type='subprocess'),
                  import_names=['json'])
    cfg = compile_main(dict(), create=create)
    assert cfg.policy.type == 'impala'
    assert cfg.env.type == 'gym'
    assert cfg.env.manager == 'async'                   # DI-engine's 'subprocess' is our 'async'
    assert cfg.import_names == ['json']


def test_import_names_keep_their_order_in_the_run_and_when_it_is_read_again(tmp_path, monkeypatch):
    """A later module may re-register a name with force=True: the modules are imported, saved and imported again
    (resume, eval) in the order given; sorted, the folder could no longer be read (its first module's plain
    registration came second and was refused)."""
    from acframe.config.run_folder import check_stored_imports
    from acframe.registry import HOOK_REGISTRY

    (tmp_path / 'order_zb.py').write_text("from acframe import HOOK_REGISTRY\nfrom acframe.worker import LearnerHook\n"
                                          "HOOK_REGISTRY.register('order_hook')(type('B', (LearnerHook,), {}))\n")
    (tmp_path / 'order_aa.py').write_text("from acframe import HOOK_REGISTRY\nfrom acframe.worker import LearnerHook\n"
                                          "HOOK_REGISTRY.register('order_hook', force=True)(type('A', (LearnerHook,), {}))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        cfg = compile_config('cartpole_ppo.py', overrides=["import_names=['order_zb','order_aa','order_zb']"])
        assert cfg.import_names == ['order_zb', 'order_aa'] and HOOK_REGISTRY.get('order_hook').__name__ == 'A'
        assert check_stored_imports(['order_zb', 'order_aa'], ['order_aa', 'order_zb', 'json'], 'config.json') == \
            ['order_zb', 'order_aa', 'json']
    finally:
        HOOK_REGISTRY._entries.pop('order_hook', None)
        for name in ('order_zb', 'order_aa'):
            sys.modules.pop(name, None)


def test_what_each_imported_module_registered_is_known_so_acting_on_a_run_needs_only_what_acts(tmp_path, monkeypatch):
    """A run's modules are recorded with what they registered; a module that registered only loggers, replay
    buffers or hooks is not needed to evaluate, export or load the run (eval asked for a logger's module); one that
    registered anything else, or whose registrations this process did not see, is."""
    from acframe.config.run_folder import ACTING_NEEDS_NOT, _registers_only
    from acframe.registry import BUFFER_REGISTRY, import_names, registrations_of

    (tmp_path / 'seen_buffer.py').write_text("from acframe import BUFFER_REGISTRY\nfrom acframe.data import ReplayBuffer\n"
                                             "BUFFER_REGISTRY.register('seen_buffer')(type('B', (ReplayBuffer,), {}))\n")
    (tmp_path / 'seen_both.py').write_text("import gymnasium\nfrom acframe import BUFFER_REGISTRY\n"
                                           "from acframe.data import ReplayBuffer\n"
                                           "BUFFER_REGISTRY.register('seen_both')(type('B', (ReplayBuffer,), {}))\n"
                                           "gymnasium.register('SeenBoth-v0', entry_point='gymnasium.envs.classic_control"
                                           ":CartPoleEnv')\n")
    (tmp_path / 'seen_hook.py').write_text("from acframe import HOOK_REGISTRY, LearnerHook\n"
                                           "HOOK_REGISTRY.register('seen_hook')(type('H', (LearnerHook,), {}))\n")
    (tmp_path / 'seen_before.py').write_text("from acframe import BUFFER_REGISTRY\nfrom acframe.data import ReplayBuffer\n"
                                             "BUFFER_REGISTRY.register('seen_before')(type('B', (ReplayBuffer,), {}))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import seen_before  # noqa: F401 - a script imported it itself: what it registered was not seen
        import_names(['seen_buffer', 'seen_both', 'seen_before', 'seen_hook'])
        assert registrations_of('seen_buffer') == ['buffer:seen_buffer']
        assert registrations_of('seen_hook') == ['hook:seen_hook']
        assert registrations_of('seen_both') == ['buffer:seen_both', 'gym:SeenBoth-v0']
        assert registrations_of('seen_before') is None
        needed = [name for name in ('seen_buffer', 'seen_both', 'seen_before', 'seen_hook')
                  if not _registers_only(registrations_of(name), ACTING_NEEDS_NOT)]
        assert needed == ['seen_both', 'seen_before']
    finally:
        import gymnasium
        gymnasium.registry.pop('SeenBoth-v0', None)
        from acframe.registry import HOOK_REGISTRY
        HOOK_REGISTRY._entries.pop('seen_hook', None)
        for name in ('seen_buffer', 'seen_both', 'seen_before', 'seen_hook'):
            BUFFER_REGISTRY._entries.pop(name, None)
            sys.modules.pop(name, None)


# ---- unknown keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize('main, message', [
    (dict(policy=dict(lern=dict())), "unknown config key 'policy.lern'; did you mean 'policy.learn'?"),
    (dict(policy=dict(collect=dict(n_samples=3))),
     "unknown config key 'policy.collect.n_samples'; did you mean 'policy.collect.n_sample'?"),
    # a key in the wrong section: the same name elsewhere is the closest valid key
    (dict(policy=dict(learning_rate=0.1)), "unknown config key 'policy.learning_rate'; did you mean 'policy.learn.learning_rate'?"),
    # the one key of that very name elsewhere beats a sibling that is only like it ('policy.learn')
    (dict(policy=dict(learner_num=2)), "unknown config key 'policy.learner_num'; did you mean 'parallel.learner_num'?"),
    (dict(env=dict(zzz=1)), "unknown config key 'env.zzz'; valid keys under 'env' are: atari, collector_env_num,"),
])
def test_unknown_key_names_its_full_path_and_the_closest_valid_key(main, message):
    with pytest.raises(ConfigError) as info:
        compile_main(main)
    assert str(info.value).startswith(message)


def test_an_override_cannot_replace_a_section_with_a_value():
    with pytest.raises(ConfigError, match="'policy.learn' must be a dict"):
        compile_config('cartpole_impala.py', ['policy.learn=3'])


def test_unknown_override_key_names_its_full_path_and_the_closest_valid_key():
    with pytest.raises(ConfigError, match=r"unknown config key 'env\.n_evaluator_episodes'; did you mean 'env\.n_evaluator_episode'\?"):
        compile_main(dict(), ['env.n_evaluator_episodes=3'])
    with pytest.raises(ConfigError, match=r"'policy\.other\.buffer'; did you mean 'policy\.other\.replay_buffer'\?"):
        compile_main(dict(), ['policy.other.buffer.max_use=2'])


def test_a_dotted_override_makes_a_mapping_inside_the_free_form_mappings_the_users_code_reads():
    """A logger backend's options and an env's kwargs are the user's: ``logger.options.mine.file=x`` sets what a
    config file would write as ``logger=dict(options=dict(mine=dict(file='x')))``."""
    cfg = compile_config('cartpole_a2c.py', ['logger.options.csv.file=s.csv', 'logger.options.csv.every=2',
                                             'env.env_kwargs.options.low=0.1'])
    assert cfg.logger.options == {'csv': {'file': 's.csv', 'every': 2}}
    assert cfg.env.env_kwargs == {'options': {'low': 0.1}}


@pytest.mark.parametrize('override, message', [
    # a section inside the model's free-form mapping is made only where policies declare one (policy.model.rnn)
    ('policy.model.rnnn.type=lstm', "unknown config key 'policy.model.rnnn'; did you mean 'policy.model.rnn'?"),
    # a free-form mapping is still a mapping
    ('policy.model=None', "config key 'policy.model' must not be None"),
])
def test_a_dotted_override_makes_no_section_where_none_is_declared_in_the_model(override, message):
    with pytest.raises(ConfigError) as info:
        compile_config('cartpole_ppo.py', [override])
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize('override, message', [
    # a Stable-Baselines3 / RL Zoo name is answered with acframe's key, not with the nearest spelling
    ('policy.learn.ent_coef=0.01',
     "unknown config key 'policy.learn.ent_coef': that is Stable-Baselines3's name; acframe's is "
     "'policy.learn.entropy_weight'"),
    ('policy.learn.n_steps=128', "acframe's is 'policy.collect.n_sample' (samples per collection over all envs: "
                                 "n_steps x n_envs for PPO and A2C; IMPALA's and ACER's samples are unrolls"),
    ('policy.learn.clip_range=0.1', "acframe's is 'policy.learn.clip_ratio'"),
    ('total_timesteps=100000', "unknown config key 'total_timesteps': that is Stable-Baselines3's name; acframe's is "
                               "'max_env_step' (or --max-env-step"),
    ('policy.learn.target_kl=0.01', "that is Stable-Baselines3's name; acframe has no such setting (PPO's KL early "
                                    "stop of an update is not implemented"),
    ('env.env_wrapper=1', "that is the RL Zoo's name; acframe's is 'env.type' (wrap the env in a factory of your own"),
    ('policy=MlpPolicy', "config key 'policy' must be a dict (a section of keys), got str 'MlpPolicy'; set one of its "
                         "keys, e.g. policy.type='ppo' (or 'a2c', 'impala', 'acer': the algorithm); 'MlpPolicy' is "
                         "Stable-Baselines3's network, which is acframe's policy.model"),
    # the RL Zoo's schedules and gSDE's -1
    ('policy.learn.learning_rate=lin_3e-4', "got str 'lin_3e-4'; 'lin_3e-4' is the RL Zoo's linear schedule: give its "
                                            "start value here (3e-4) and the gradient steps of its decay to 0 in "
                                            "policy.learn.lr_decay_iters"),
    ('policy.collect.sde_sample_freq=-1', "must be >= 1; SB3's -1 (a draw at each rollout's start only) is the steps "
                                          "each env collects per rollout"),
    # a key another policy declares says so (burn-in is ACER's: its replayed windows)
    ('policy.model.rnn.burn_in=4',
     "unknown config key 'policy.model.rnn.burn_in': a key of policy acer, not of this one; remove it, or use "
     "policy.type=acer"),
])
def test_a_key_of_another_framework_or_another_policy_is_named_as_such(override, message):
    with pytest.raises(ConfigError) as info:
        compile_config('cartpole_novel_ppo_lstm.py', [override])
    assert message in str(info.value), str(info.value)


def test_a_policy_type_override_takes_that_policys_defaults():
    """``policy.type=X`` compiles the file's keys into X's defaults, as ``create_config.policy.type=X`` would: a file
    with no algorithm's keys trains another algorithm; a key of the file's own algorithm is named (the override once
    merged into the file's algorithm's defaults and blamed a default the file never set, 'policy.model.rnn.seq_len')."""
    pair = (dict(env=dict(env_id='CartPole-v1', collector_env_num=4), policy=dict(learn=dict(learning_rate=1e-3))),
            dict(env=dict(type='gym'), policy=dict(type='ppo')))
    cfg = compile_config(pair, ['policy.type=a2c'])
    assert cfg.policy.type == 'a2c' and cfg.policy.learn.learning_rate == 1e-3
    assert 'epoch_per_collect' not in cfg.policy.learn and 'seq_len' not in cfg.policy.model.rnn
    with pytest.raises(ConfigError, match=r"^unknown config key 'policy.learn.epoch_per_collect': a key of policy ppo"):
        compile_config('cartpole_ppo.py', ['policy.type=a2c'])
    with pytest.raises(ConfigError, match=r"^config key 'policy.type' = 3 must be a registered policy's name"):
        compile_config('cartpole_ppo.py', ['policy.type=3'])


@pytest.mark.parametrize('override, message', [
    # DI-engine's priority switches, which its config files' translation reads, on the command line
    ('policy.priority=True', "unknown config key 'policy.priority': that is DI-engine's name; acframe's is "
                             "'policy.other.replay_buffer.type' (a prioritized buffer type: 'prioritized'"),
    ('policy.other.replay_buffer.priority_IS_weight=False', "acframe's is 'policy.other.replay_buffer.is_weight'"),
    ('policy.other.replay_buffer.priority_power_factor=0.6', "acframe's is 'policy.other.replay_buffer.alpha'"),
])
def test_di_engines_priority_switches_on_the_command_line_name_acframes_keys(override, message):
    with pytest.raises(ConfigError) as info:
        compile_config('cartpole_impala.py', [override])
    assert message in str(info.value), str(info.value)
    cfg = compile_config('cartpole_impala.py', ['policy.other.replay_buffer.type=prioritized',
                                                'policy.other.replay_buffer.alpha=0.5'])
    assert cfg.policy.other.replay_buffer.alpha == 0.5


def test_every_foreign_name_points_at_a_key_acframe_declares():
    import inspect

    from acframe.config.compile import buffer_defaults, default_config
    from acframe.config.foreign_names import FOREIGN_NAMES
    from acframe.models.vac import VAC
    from acframe.policy.base import RNN_MODEL_KEYS
    from acframe.registry import POLICY_REGISTRY

    model_keys = set(inspect.signature(VAC.__init__).parameters) | {f'rnn.{k}' for k in RNN_MODEL_KEYS}
    configs = [default_config(name) for name in POLICY_REGISTRY.names()]
    configs += [{'policy': {'other': {'replay_buffer': buffer_defaults(kind)[0]}}}  # a buffer type's own keys
                for kind in ('prioritized', 'episodic_prioritized')]
    for name, (_, ours, _) in FOREIGN_NAMES.items():
        if ours is None:  # (no acframe counterpart: the note says so)
            continue
        if ours.startswith('policy.model.'):
            assert ours[len('policy.model.'):] in model_keys, name
            continue
        found = False
        for cfg in configs:
            node = cfg
            for part in ours.split('.'):
                node = node.get(part) if isinstance(node, dict) and part in node else KeyError
            found = found or node is not KeyError
        assert found, (name, ours)


def test_override_without_equals_sign_says_the_form():
    with pytest.raises(ConfigError, match='key.path=value'):
        compile_main(dict(), ['policy.learn.learning_rate'])


def test_unknown_or_missing_policy_type():
    with pytest.raises(RegistryError, match="unknown policy 'impal'. Did you mean 'impala'?"):
        compile_main(dict(), create=dict(policy=dict(type='impal')))
    with pytest.raises(ConfigError, match='create_config.policy.type is not set'):
        compile_main(dict(), create=dict())


# ---- types and values -----------------------------------------------------------------------------
@pytest.mark.parametrize('main, message', [
    (dict(policy=dict(learn=dict(discount_factor='high'))),
     "config key 'policy.learn.discount_factor' must be float (like its default 0.99), got str 'high'"),
    (dict(policy=dict(learn=dict(batch_size=2.5))), "config key 'policy.learn.batch_size' must be int"),
    (dict(policy=dict(cuda=1)), "config key 'policy.cuda' must be bool"),
    (dict(env=dict(collector_env_num=None)), "config key 'env.collector_env_num' must not be None"),
    (dict(policy=dict(learn=dict(discount_factor=1.5))), "config key 'policy.learn.discount_factor' = 1.5 must lie in [0, 1]"),
    (dict(policy=dict(learn=dict(lambda_=-0.1))), "config key 'policy.learn.lambda_' = -0.1 must lie in [0, 1]"),
    (dict(policy=dict(learn=dict(batch_size=0))), "config key 'policy.learn.batch_size' = 0 must be > 0"),
    (dict(env=dict(collector_env_num=-2)), "config key 'env.collector_env_num' = -2 must lie in [1, 4096]"),
    (dict(policy=dict(learn=dict(learning_rate=0.0))), "config key 'policy.learn.learning_rate' = 0.0 must be > 0"),
    (dict(policy=dict(learn=dict(entropy_weight=-1.0))), "config key 'policy.learn.entropy_weight' = -1.0 must be >= 0"),
    (dict(policy=dict(learn=dict(optim='sgd'))), "config key 'policy.learn.optim' = 'sgd' is not one of 'adam', 'rmsprop'"),
    (dict(policy=dict(learn=dict(grad_clip_type='clip_everything'))), "config key 'policy.learn.grad_clip_type'"),
    (dict(policy=dict(learn=3)), "config key 'policy.learn' must be a dict"),
    (dict(env=dict(env_kwargs=[1])), "config key 'env.env_kwargs' must be a dict"),
    # a string for a whole section: its type, except the env's, whose type is the factory (an id is env.env_id)
    (dict(env='CartPole-v1'), "config key 'env' must be a dict, got str 'CartPole-v1'; did you mean env.env_id='CartPole-v1'?"),
    (dict(env='gym'), "config key 'env' must be a dict, got str 'gym'; did you mean env.type='gym'?"),
    # a None default takes its type from the declaration its comment starts with
    (dict(env=dict(max_episode_steps='abc')), "config key 'env.max_episode_steps' must be int (as declared)"),
    (dict(env=dict(max_episode_steps=-3)), "config key 'env.max_episode_steps' = -3 must lie in [1, 1_000_000_000] (or None)"),
    (dict(env=dict(obs_keys=7)), "config key 'env.obs_keys' must be list (as declared), got int 7"),
    (dict(seed=-1), "config key 'seed' = -1 must lie in [0, 2_137_483_647]"),
    (dict(env=dict(stop_value=float('nan'))), "config key 'env.stop_value' is NaN; set a number"),
    (dict(policy=dict(learn=dict(learning_rate=float('inf')))), "config key 'policy.learn.learning_rate' is inf; set a finite number"),
])
def test_bad_types_and_values_are_rejected_naming_the_key(main, message):
    with pytest.raises(ConfigError) as info:
        compile_main(main)
    assert message in str(info.value)


def test_accepted_conversions_and_documented_nones():
    cfg = compile_main(dict(policy=dict(learn=dict(learning_rate=1, batch_size=8.0)), env=dict(stop_value=None)))
    assert cfg.policy.learn.learning_rate == 1.0 and isinstance(cfg.policy.learn.learning_rate, float)
    assert cfg.policy.learn.batch_size == 8 and isinstance(cfg.policy.learn.batch_size, int)
    assert cfg.env.stop_value is None          # declared '(float in [-inf, inf] or None)'
    assert compile_main(dict(env=dict(stop_value=float('inf')))).env.stop_value == float('inf')
    assert compile_main(dict(policy=dict(learn=dict(grad_clip_type='none')))).policy.learn.grad_clip_type == 'none'


# ---- files ----------------------------------------------------------------------------------------
def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_config_file_is_read_and_a_name_is_found_in_dizoo_configs(tmp_path, monkeypatch):
    path = write(tmp_path / 'my_cfg.py', """
        main_config = dict(exp_name='mine', env=dict(stop_value=100))
        create_config = dict(policy=dict(type='impala'))
    """)
    cfg = compile_config(str(path))
    assert cfg.exp_name == 'mine' and cfg.env.stop_value == 100
    monkeypatch.chdir(tmp_path)  # no such file here: the installed package answers
    assert resolve_config_path('cartpole_impala.py').endswith('dizoo_configs/cartpole_impala.py')
    assert resolve_config_path('cartpole_impala') == resolve_config_path('cartpole_impala.py')


def test_config_file_errors_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(ConfigError, match="config file 'cartpole_impal.py' not found.*Did you mean 'cartpole_impala.py'"):
        compile_config('cartpole_impal.py')
    broken = write(tmp_path / 'broken.py', "main_config = dict(\n")
    with pytest.raises(ConfigError, match='syntax error'):
        compile_config(str(broken))
    empty = write(tmp_path / 'empty.py', "x = 1\n")
    with pytest.raises(ConfigError, match="defines no 'main_config'"):
        compile_config(str(empty))
    raising = write(tmp_path / 'raising.py', "main_config = dict(a=1 / 0)\n")
    with pytest.raises(ConfigError, match='raised ZeroDivisionError'):
        compile_config(str(raising))
    importing = write(tmp_path / 'importing.py', "import my_helpers_nowhere\nmain_config = dict()\n")
    with pytest.raises(ConfigError, match=r"raised ModuleNotFoundError: No module named 'my_helpers_nowhere' .*; install "
                                          r"the module, or put the folder of a module of your own on PYTHONPATH"):
        compile_config(str(importing))


def test_saved_config_reloads_to_the_identical_config(tmp_path):
    cfg = compile_config('cartpole_impala.py', ['policy.learn.learning_rate=0.002', 'env.stop_value=None'], seed=5)
    path = tmp_path / 'config.py'
    save_config(cfg, path)
    main, create = load_config_file(str(path))
    assert create['policy']['type'] == 'impala'
    assert compile_config(str(path)) == cfg
    assert [p.name for p in tmp_path.iterdir()] == ['config.py']  # written atomically: no temporary left


def test_a_saved_config_puts_each_keys_declaration_above_it_and_keeps_inf(tmp_path):
    source = write(tmp_path / 'inf.py', textwrap.dedent("""
        main_config = dict(env=dict(env_id='CartPole-v1', stop_value=float('inf')))
        create_config = dict(policy=dict(type='a2c'))
    """))
    cfg = compile_config(str(source))
    saved = tmp_path / 'saved.py'
    save_config(cfg, saved)
    assert compile_config(str(saved)) == cfg  # float('inf'), not a bare inf
    lines = saved.read_text().splitlines()
    rate = next(i for i, line in enumerate(lines) if line.strip().startswith("'learning_rate':"))
    assert lines[rate - 1].strip().startswith('# (float > 0)')
    stop = next(i for i, line in enumerate(lines) if line.strip().startswith("'stop_value':"))
    assert lines[stop] == "        'stop_value': float('inf'),"
    assert lines[stop - 1].startswith('        # (float in [-inf, inf] or None) Training stops')
    comment_lines = {line.strip() for line in lines if line.strip().startswith('#')}
    leaves = 0
    for path, comment in config_comments(cfg).items():
        node = cfg
        for part in path.split('.'):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None and not isinstance(node, dict):
            leaves += 1
            assert '# ' + ' '.join(comment.split()) in comment_lines, path
    assert leaves > 40


def test_config_errors_do_not_import_torch(tmp_path):
    """A typo is answered by reading sources statically: no torch, numpy or gymnasium import."""
    script = textwrap.dedent("""
        import sys
        from acframe.config import compile_config
        from acframe.errors import ConfigError
        try:
            compile_config('cartpole_impala.py', ['policy.learn.learnin_rate=0.1'])
        except ConfigError as exc:
            print('error:', exc)
        cfg = compile_config('cartpole_impala.py')
        heavy = sorted(m for m in ('torch', 'numpy', 'gymnasium', 'treetensor') if m in sys.modules)
        print('heavy:', ','.join(heavy))
    """)
    out = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "error: unknown config key 'policy.learn.learnin_rate'; did you mean 'policy.learn.learning_rate'?" in out.stdout
    assert 'heavy: \n' in out.stdout


def test_validation_is_the_same_before_and_after_the_policy_module_is_imported(tmp_path, monkeypatch):
    """Declarations come from the source comments, whether or not the policy class is loaded yet."""
    from acframe.registry import POLICY_REGISTRY

    write(tmp_path / 'acframe_probe_policy.py', """
        from acframe.policy import Policy

        class ProbePolicy(Policy):
            config = dict(
                learn=dict(
                    # (float > 0 or None) Clip of something; None disables the clip.
                    clip_ratio=1.0,
                ),
            )
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    POLICY_REGISTRY.register_lazy('probe_policy', 'acframe_probe_policy:ProbePolicy')
    try:
        main, create = dict(policy=dict(learn=dict(clip_ratio=None))), dict(policy=dict(type='probe_policy'))
        assert compile_config((main, create)).policy.learn.clip_ratio is None      # read statically
        POLICY_REGISTRY.get('probe_policy')
        assert compile_config((main, create)).policy.learn.clip_ratio is None      # read from the loaded class
        with pytest.raises(ConfigError, match=r"'policy.learn.clip_ratio' = 0.0 must be > 0 \(or None\)"):
            compile_config((dict(policy=dict(learn=dict(clip_ratio=0.0))), create))
    finally:
        POLICY_REGISTRY._entries.pop('probe_policy', None)
        sys.modules.pop('acframe_probe_policy', None)


def test_a_users_policy_config_held_in_a_module_level_name_with_expressions_keeps_its_rules(tmp_path, monkeypatch):
    (tmp_path / 'named_config_policy.py').write_text(
        "from acframe import POLICY_REGISTRY\nfrom acframe.policy.a2c import A2CPolicy\n\nSCALE = 2.0\n"
        "MY_CONFIG = dict(\n    learn=dict(\n        # (float > 0) A key of the user's own.\n        my_key=0.1 * SCALE,\n"
        "    ),\n)\n\n\n@POLICY_REGISTRY.register('named_config_a2c')\nclass Named(A2CPolicy):\n    config = MY_CONFIG\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from acframe import POLICY_REGISTRY
    create = dict(policy=dict(type='named_config_a2c'), import_names=['named_config_policy'])
    try:
        cfg = compile_config((dict(), create))
        assert cfg.policy.learn.my_key == pytest.approx(0.2) and cfg.policy.learn.gae_lambda == 1.0
        with pytest.raises(ConfigError, match='policy.learn.my_key'):
            compile_config((dict(), create), ['policy.learn.my_key=-1.0'])
    finally:
        POLICY_REGISTRY._entries.pop('named_config_a2c', None)


def test_a_create_config_key_as_an_override_names_its_command_line_key():
    """pixels.md's create_config.env.type='toy_pixel_dot' typed as an override was 'unknown config key create_config'."""
    with pytest.raises(ConfigError, match=r"create_config is a config file's; on the command line it is "
                                          r"env.type=toy_pixel_dot"):
        compile_config('cartpole_impala.py', ['create_config.env.type=toy_pixel_dot'])
    with pytest.raises(ConfigError, match=r"it is env.manager=async"):
        compile_config('cartpole_impala.py', ['create_config.env_manager.type=async'])
    with pytest.raises(ConfigError, match=r"^override 'env_manager.type': env_manager is a config file's "
                                          r"create_config section; on the command line it is env.manager=async$"):
        compile_config('cartpole_impala.py', ['env_manager.type=async'])  # (as policy.type, by analogy)


def test_overrides_may_be_a_dict_or_one_string_and_anything_else_is_one_line(tmp_path):
    """A script's ``overrides={'key.path': value}`` is read as its pairs and ``overrides='key=value'`` as one override
    (a string is no list of its characters), through every entry point that takes overrides."""
    import json

    from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy

    assert compile_config('cartpole_ppo.py', {'policy.learn.batch_size': 32}).policy.learn.batch_size == 32
    assert compile_config('cartpole_ppo.py', 'policy.learn.batch_size=32').policy.learn.batch_size == 32
    with pytest.raises(ConfigError, match="overrides must be a list of 'key.path=value' strings .*got int"):
        compile_config('cartpole_ppo.py', 5)
    serial_pipeline_onpolicy('cartpole_ppo.py', overrides={'policy.learn.epoch_per_collect': 1, 'env.stop_value': None},
                             exp_dir=str(tmp_path / 'run'), max_env_step=300, progress=False)
    stored = json.loads((tmp_path / 'run' / 'config.json').read_text())['config']
    assert stored['policy']['learn']['epoch_per_collect'] == 1 and stored['max_env_step'] == 300


def test_the_inherited_stop_value_warning_names_the_configs_own_env_for_a_registered_env_type():
    """A config of a registered env type (no env_id of its own) overridden to a gymnasium id: its stop value is the
    type's, not the default config's env_id (it said 'CartPole-v1', which the config never named)."""
    config = (dict(env=dict(stop_value=0.9, collector_env_num=8)), dict(env=dict(type='toy_tictactoe'), policy=dict(type='ppo')))
    with pytest.warns(UserWarning, match=r"^env.env_id was overridden to 'Pendulum-v1' but env.stop_value=0.9 is the "
                                         r"config's value for 'toy_tictactoe'; set env.stop_value for 'Pendulum-v1'"):
        compile_config(config, ['env.type=gym', 'env.env_id=Pendulum-v1'])


@pytest.mark.parametrize('mode, override, warned', [
    ('async', 'parallel.actor_num=5', "parallel.actor_num is read by -m parallel only; this -m async run ignores it; "
                                      "its workers are parallel.async_worker_num"),
    ('async', 'parallel.inference=server', "parallel.inference is read by -m parallel only; this -m async run "
                                           "ignores it; its workers are parallel.async_worker_num"),
    ('serial', 'parallel.actor_num=2', "parallel.actor_num is read by -m parallel only; this serial run ignores it"),
    ('parallel', 'parallel.async_worker_num=2', "parallel.async_worker_num is read by -m async only; this -m parallel "
                                                "run ignores it"),
    ('serial_onpolicy', 'parallel.learner_num=2', None), ('parallel', 'parallel.actor_num=2', None),
    ('async', 'parallel.async_worker_num=2', None), ('async', 'parallel.learner_num=2', None)])
def test_a_parallel_key_the_pipeline_does_not_read_is_warned_about(mode, override, warned):
    """parallel.actor_num=4 on an A3C run gave it no 4 workers, without a word (the keys are per pipeline)."""
    import warnings

    from acframe.config.compile import warn_idle_parallel_keys
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        warn_idle_parallel_keys([override, 'policy.learn.learning_rate=0.01'], mode)
    assert [str(w.message) for w in caught] == ([warned] if warned else [])


@pytest.mark.parametrize('mode, overrides, warned', [
    ('serial_onpolicy', ['env.step_timeout_s=5'], True),
    ('serial', ['env.step_timeout_s=5', 'env.manager=async'], False),  # (the subprocesses are watched)
    ('parallel', ['env.step_timeout_s=5'], False),  # (the workers are)
    ('serial_onpolicy', ['env.step_timeout_s=None'], False),
    ('serial_onpolicy', [], False)])  # (the default: said nowhere, as the docs say what it watches)
def test_a_step_timeout_given_for_envs_no_watchdog_watches_is_warned_about(mode, overrides, warned):
    """check-env said a hanging env stalls a run "unless env.step_timeout_s is set"; set, a serial run with the sync
    manager hung all the same (its envs step in the run's own process, which no watchdog interrupts)."""
    import warnings

    from acframe.config.compile import warn_unwatched_step_timeout
    cfg = compile_config('cartpole_ppo.py', overrides)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        warn_unwatched_step_timeout(overrides, cfg, mode)
    assert [str(w.message) for w in caught] == ([
        "env.step_timeout_s=5 watches envs that step in subprocesses (env.manager='async') or in -m parallel's "
        "workers; this serial run's env.manager='sync' steps them in this process, where a hung step is not stopped: "
        "set env.manager='async' too"] if warned else [])


@pytest.mark.parametrize('name, said', [
    ('cartpole_novel_ppo.py', r" Did you mean 'cartpole_novel_ppo_lstm.py'\? acframe --list lists every config$"),
    ('zzz.py', r" acframe --list lists every config$")])
def test_a_config_name_that_is_not_found_names_the_nearest_and_the_list_flag_not_all_sixty(name, said):
    with pytest.raises(ConfigError, match=rf"^config file '{name}' not found here nor in dizoo_configs\.{said}"):
        compile_config(name)


def test_a_config_written_for_another_pipeline_is_warned_in_the_words_of_the_pipeline_that_runs_it():
    from acframe.config.compile import warn_other_pipeline

    with pytest.warns(ConfigWarning, match=r"written for -m async \(pipeline='async'\): -m tune's trials train it "
                                           r"serially, so the values they find are a serial run's$"):
        warn_other_pipeline({'pipeline': 'async'}, 'tune')  # (not "run it without -m": that would not tune it)
    with pytest.warns(ConfigWarning, match=r"this -m parallel run trains it otherwise; run acframe -c CONFIG without "
                                           r"-m \(or -m async\), or async_pipeline\(\) from a script$"):
        warn_other_pipeline({'pipeline': 'async'}, 'parallel')
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        for written, mode in ((None, 'parallel'), ('async', 'async'), ('serial', 'serial_onpolicy'), ('serial', 'tune')):
            warn_other_pipeline({'pipeline': written}, mode)  # the same pipeline (serial's two forms one): no word


def test_what_a_runs_modules_registered_is_kept_by_a_sitting_that_did_not_see_their_import(tmp_path):
    """A resume from a script that imported the module itself sees nothing of its registrations: config.json lost
    them, and acting on the run asked for the module again."""
    import json

    from acframe.config.run_folder import run_record, save_run_config

    cfg = compile_config('cartpole_ppo.py')
    cfg.import_names = ['a_module_this_process_never_imported']
    (tmp_path / 'config.json').write_text(run_record(cfg, 'serial_onpolicy', known_registers={
        'a_module_this_process_never_imported': ['logger:kept']}))
    save_run_config(cfg, str(tmp_path), 'serial_onpolicy')
    assert json.loads((tmp_path / 'config.json').read_text())['import_registers'] == {
        'a_module_this_process_never_imported': ['logger:kept']}
