"""DI-engine's config files, read as they are (``acframe -c cartpole_a2c_config.py`` of DI-engine 0.5.x).

``translate_ding_config(main, create, defaults_of)`` rewrites what DI-engine spells differently into acframe's
keys before ``compile_config`` merges and validates the result; everything else stays strict:

* **env**: ``create_config.env.type`` of DI-engine (``'cartpole'``, ``'pendulum'``, ``'lunarlander'`` ...)
  becomes ``type='gym'`` with the gymnasium id (``DING_ENV_TYPES``) unless the file names ``env.env_id``;
  Box2D ids of gym's ``-v2`` become gymnasium's ``-v3`` (one note); ``create_config.env.import_names`` are
  imported, except DI-engine's own ``dizoo.*`` modules, which acframe does not need (one note).
* **Atari and MuJoCo** (``DING_ENV_ID_TYPES``): ``type='atari'`` with gym's ``<Game>NoFrameskip-v4`` is
  ``ALE/<Game>-v5`` through ``env.atari`` with DI-engine's ``wrap_deepmind`` settings (no sticky actions, its
  ``frame_stack``); ``type='mujoco'`` ids ``-v2/-v3/-v4`` are gymnasium's ``-v5`` (a v3 ``obs_shape`` that v5 changed
  is left to the env); a 3-dim ``obs_shape`` with DI-engine's ConvEncoder sizes is acframe's ``nature_cnn``. One note each.
* **objects and schedules**: a ``torch.nn`` activation module is read as its name (``DING_ACTIVATIONS``), PPO's
  ``learn.lr_scheduler`` as ``learn.lr_decay_iters`` in gradient steps, an ``exp_name`` path as its last part.
* **data-parallel learners**: ``multi_gpu=True`` runs with ``parallel.learner_num=N`` given beside the file (the
  number is DI-engine's launcher's, ``--nproc_per_node``), its per-rank batch keys (``PER_RANK_KEYS``) times N, one
  note; without N it is refused in one line naming ``parallel.learner_num``.
* **refused in one line**: ``reward_model`` (GCL, TREX, RND ...),
  ``env.norm_obs/norm_reward.use_norm=True`` (acframe normalizes inside the policy); ``env.rew_clip=True`` is
  accepted with a note saying it is not applied.
* **buffers**: ``replay_buffer.type='naive'`` (or ``'advanced'``, ``'deque'``; in ``create_config`` or ``policy.other``) is the policy's own
  default buffer (IMPALA's ``fifo``, ACER's ``episodic``). ``priority=True`` (``policy.priority`` or
  ``policy.other.replay_buffer.priority``) makes it prioritized (``PRIORITIZED``: ``fifo`` -> ``prioritized``,
  ``episodic`` -> ``episodic_prioritized``, one note) and ``priority_IS_weight`` is its ``is_weight``; the buffer's
  ``alpha``, ``beta`` and ``anneal_step`` (and DI-engine's middleware names ``priority_power_factor``,
  ``IS_weight_power_factor``, ``IS_weight_anneal_train_iter``) are then its keys, else unused.
* **aliases** (``ALIASES``): keys that mean the same thing under another name or place move to acframe's key;
  when both are given they must agree.
* **renamed keys** (``RENAMED``): acframe's former names (``policy.learn.clip_value``, now DI-engine's
  ``grad_clip_value``; DI-engine's IMPALA files spell it ``clip_value`` too) still work, in files and overrides
  alike, with one ``ConfigWarning`` naming the new key.
* ``policy.on_policy``: whether a policy learns on-policy is a property of the policy class (``Policy.on_policy``),
  not a setting; DI-engine's files state it, so a value that agrees with the policy is dropped silently and one
  that does not is an error (``policy.on_policy=False`` cannot make A2C learn off-policy).
* **unused keys** (``DING_KEYS``): DI-engine keys acframe has no use for are dropped with ONE warning line
  naming them all. Only keys in that table are accepted: any other unknown key (a typo) still fails in
  ``compile_config`` with the nearest valid key.

Messages go to the ``acframe`` logger (printed to stderr as one line each when logging is not configured).
See docs/from_di_engine.md for what maps to what and the deliberate differences.
"""
from __future__ import annotations

import logging
import re
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import ConfigError, ConfigWarning

logger = logging.getLogger('acframe')

#: DI-engine's env types (``create_config.env.type``) -> gymnasium ids
DING_ENV_TYPES: Dict[str, str] = {
    'cartpole': 'CartPole-v1',
    'pendulum': 'Pendulum-v1',
    'lunarlander': 'LunarLander-v3',
    'bipedalwalker': 'BipedalWalker-v3',
    'acrobot': 'Acrobot-v1',
    'mountain_car': 'MountainCar-v0',
}
#: DI-engine's env types whose file names the id (``env.env_id``): type -> how acframe builds it (see _translate_env)
DING_ENV_ID_TYPES: Dict[str, str] = {
    # '<Game>NoFrameskip-v4' -> 'ALE/<Game>-v5' with env.atari: DI-engine's wrap_deepmind chain (30 no-ops, 4 frames
    # max-pooled, life loss and reward clipping in training envs, FIRE, 84x84 grey, frame_stack), no sticky actions
    'atari': 'ALE/<Game>-v5 with env.atari (the DeepMind preprocessing)',
    # gym's MuJoCo ids ('HalfCheetah-v3') -> gymnasium's '-v5' (the same task; mujoco-py's v2/v3 do not run here)
    'mujoco': 'gymnasium MuJoCo -v5',
}
#: gym's Atari ids DI-engine's atari env reads (no frame skip in the emulator: its MaxAndSkip wrapper skips 4)
_ATARI_NOFRAMESKIP = re.compile(r'^(?P<game>[A-Za-z]+)NoFrameskip-v(?P<version>[04])$')
#: gym's MuJoCo ids (mujoco-py's -v2/-v3, the mujoco bindings' -v4) that gymnasium 1.x runs as -v5
_MUJOCO_OLD = re.compile(r'^(Ant|HalfCheetah|Hopper|Walker2d|Humanoid|HumanoidStandup|Swimmer|Reacher|Pusher|'
                         r'InvertedPendulum|InvertedDoublePendulum)-v[234]$')
#: MuJoCo tasks whose -v5 observation is smaller than gym's -v3 (v5 leaves out the world body's contact forces)
_MUJOCO_V5_OBS = {'Ant': (111, 105), 'Humanoid': (376, 348), 'HumanoidStandup': (376, 348)}
#: a torch.nn activation module (class or instance) given in a DI-engine file -> acframe's activation name
DING_ACTIVATIONS: Dict[str, str] = {'Tanh': 'tanh', 'ReLU': 'relu', 'ELU': 'elu'}
#: gym's Box2D ids that gymnasium 1.x renamed to -v3 (DI-engine's files name the -v2 ones)
_BOX2D_V2 = re.compile(r'^(LunarLander|LunarLanderContinuous|BipedalWalker|BipedalWalkerHardcore|CarRacing)-v2$')
#: DI-engine's env managers -> acframe's ``env.manager``
DING_ENV_MANAGERS: Dict[str, str] = {'base': 'sync', 'base_v2': 'sync', 'subprocess': 'async', 'subprocess_v2': 'async',
                                     'async_subprocess': 'async'}

#: (DI-engine key, acframe key, policies it applies to or None for all, value transform or None).
#: An alias applies only when the DI-engine key is not itself a key of the policy and acframe's key is.
#: an alias's policies: every on-policy policy (``Policy.on_policy``: A2C, PPO, a user's)
ON_POLICY = ('<on-policy>',)
ALIASES: Sequence[Tuple[str, str, Optional[Tuple[str, ...]], Optional[Callable[[Any], Any]]]] = (
    # DI-engine's on-policy policies compute GAE at collection time, so their gamma and lambda sit under collect
    ('policy.collect.discount_factor', 'policy.learn.discount_factor', ON_POLICY, None),
    ('policy.collect.gae_lambda', 'policy.learn.gae_lambda', ON_POLICY, None),
    ('policy.learn.normalize_advantage', 'policy.learn.adv_norm', None, None),
    ('policy.action_space', 'policy.model.action_space', None, None),
    # DI-engine's MuJoCo onppo files repeat the collector env count under collect
    ('policy.collect.collector_env_num', 'env.collector_env_num', None, None),
    # DI-engine's VAC switch for IMPALA's residual network; acframe chooses the encoder by name (docs/pixels.md)
    ('policy.model.impala_cnn_encoder', 'policy.model.encoder', None, lambda on: 'impala_resnet' if on else 'mlp'),
    ('policy.learn.learning_rate_actor', 'policy.learn.learning_rate', None, None),
    ('policy.learn.learning_rate_critic', 'policy.learn.critic_learning_rate', None, None),
    ('policy.learn.learning_rate_critic', 'policy.learn.learning_rate', None, None),
    ('policy.learn.grad_norm', 'policy.learn.grad_clip_value', None, None),
    ('policy.learn.eps', 'policy.learn.adam_eps', None, None),
    # ACER: DI-engine's trust_region_value is delta; its average network moves by target_theta (= 1 - alpha)
    ('policy.learn.trust_region_value', 'policy.learn.trust_region_delta', None, None),
    ('policy.learn.target_theta', 'policy.learn.trust_region_alpha', None, lambda theta: 1.0 - float(theta)),
    # the length of one train sample (DI-engine's unroll_len; see UNROLL_KEYS)
    ('policy.unroll_len', 'policy.other.replay_buffer.unroll_len', None, None),
    ('policy.learn.unroll_len', 'policy.unroll_len', None, None),
    ('policy.learn.unroll_len', 'policy.other.replay_buffer.unroll_len', None, None),
    ('policy.collect.unroll_len', 'policy.unroll_len', None, None),
    ('policy.collect.unroll_len', 'policy.other.replay_buffer.unroll_len', None, None),
    # DI-engine's learner hooks: how often the learner checkpoints and logs (the rest of its hook dict is unused)
    ('policy.learn.learner.hook.save_ckpt_after_iter', 'policy.learn.learner.save_ckpt_freq', None, int),
    ('policy.learn.learner.hook.log_show_after_iter', 'policy.learn.learner.log_freq', None, int),
    # DI-engine's env manager settings: its step watchdog (seconds; None waits forever, as acframe's)
    ('env._ding_manager.step_timeout', 'env.step_timeout_s', None, lambda seconds: None if seconds is None else float(seconds)),
)
#: DI-engine keys with an acframe counterpart that is not the same setting: the unused-keys warning names it
DING_HINTS: Dict[str, str] = {
    'policy.load_path': "init_from (--init-from) starts from an acframe checkpoint's weights",
    'policy.learn.resume_training': '--resume RUN continues a run',
    'policy.learn.learner.hook.load_ckpt_before_run':
        "init_from (--init-from) starts from an acframe checkpoint's weights",
    'policy.learn.learner.hook.save_ckpt_after_run': 'every run writes ckpt/ckpt_latest.pth when it ends',
    'policy.learn.learner.train_iterations': 'max_train_iter (--max-train-iter) bounds the gradient steps',
    'policy.eval.evaluator.stop_value': 'env.stop_value is the return a run stops at (DI-engine copies it there too)',
    'policy.eval.evaluator.n_episode': 'env.n_evaluator_episode is the episodes of each evaluation',
    'policy.collect.n_episode': 'acframe collects policy.collect.n_sample transitions per collection, not episodes',
    'create_config.collector': 'acframe collects policy.collect.n_sample transitions per collection, not episodes',
    'env.replay_path': '-m eval --video DIR records evaluation episodes',
}
#: DI-engine keys of dict value whose name is one letter from an acframe key of list value: a list given is a typo of
#: that key (acframe's ``learner.hooks``), not DI-engine's settings dict, and is refused naming it
DING_DICT_KEYS_NEAR_LISTS: Dict[str, str] = {
    'policy.learn.learner.hook': 'policy.learn.learner.hooks',
}
#: acframe's former key names -> their names now. The old name is read (with a ConfigWarning) only when it is not
#: itself a key of the policy and the new one is.
RENAMED: Dict[str, str] = {
    'policy.learn.clip_value': 'policy.learn.grad_clip_value',
}
#: DI-engine's keys for the length of a train sample; a policy that does not declare them takes only 1
UNROLL_KEYS = ('policy.unroll_len', 'policy.learn.unroll_len', 'policy.collect.unroll_len')

#: DI-engine keys acframe has no use for (a listed dict is unused with everything under it). They are dropped
#: with one warning line, unless the key is also one of acframe's keys for the policy (then it is used as is).
DING_KEYS: Tuple[str, ...] = (
    # env: DI-engine's env wrappers' options (its env.manager settings dict is dropped too: acframe's env.manager
    # is the manager's name, set by create_config.env_manager.type)
    'env.act_scale', 'env.replay_path', 'env.norm_obs', 'env.norm_reward', 'env.use_act_scale',
    'env.continuous', 'env.save_replay_gif', 'env.replay_path_gif', 'env.frame_stack', 'env.is_train',
    # DI-engine's BipedalWalker env raises the -100 fall penalty to -10 (a note says so when it is True)
    'env.rew_clip',
    # DI-engine's data-parallel learners (True runs with parallel.learner_num=N: _translate_multi_gpu)
    'policy.multi_gpu',
    # policy-level switches of DI-engine's implementations
    'policy.nstep', 'policy.discount_factor', 'policy.random_collect_size',
    'policy.transition_with_policy_data', 'policy.traj_len_inf', 'policy.multi_agent', 'policy.load_path',
    'policy.recompute_adv', 'policy.action_space',
    # learn
    'policy.learn.multi_gpu', 'policy.learn.ignore_done', 'policy.learn.epoch_per_collect', 'policy.learn.batch_size',
    'policy.learn.lambda_', 'policy.learn.learner.hook', 'policy.learn.value_norm', 'policy.learn.ppo_param_init',
    'policy.learn.trust_region_value', 'policy.learn.target_theta', 'policy.learn.unroll_len',
    'policy.learn.update_per_collect', 'policy.learn.betas', 'policy.learn.eps', 'policy.learn.weight_decay',
    # collect / eval / other
    'policy.collect.collector', 'policy.collect.discount_factor', 'policy.collect.gae_lambda', 'policy.collect.unroll_len',
    'policy.collect.n_episode', 'policy.eval.evaluator.n_episode', 'policy.eval.evaluator.stop_value',
    'policy.eval.evaluator.render', 'policy.other.eps', 'policy.other.replay_buffer.max_use',
    'policy.other.replay_buffer.periodic_thruput_seconds', 'policy.other.replay_buffer.monitor',
    'policy.other.replay_buffer.deepcopy', 'policy.other.replay_buffer.enable_track_used_data',
    # read only by DI-engine's DequeBuffer (its atari_impala_main.py), not by its serial pipeline; acframe's unrolls are
    # cut at unroll_len boundaries, as sliced=True samples them
    'policy.other.replay_buffer.sliced',
    # a prioritized buffer's keys (used as such when priority=True makes the buffer prioritized: _translate_priority)
    'policy.other.replay_buffer.alpha', 'policy.other.replay_buffer.beta', 'policy.other.replay_buffer.anneal_step',
    # model: DI-engine's normalisation and sigma/bound options (its head depth is the vac model's *_head_layer_num)
    'policy.model.norm_type',
    'policy.learn.nstep', 'policy.learn.nstep_return', 'policy.learn.resume_training', 'policy.learn.learner.train_iterations',
    'policy.model.fixed_sigma_value', 'policy.model.bound_type',
    # create_config: DI-engine's worker types (acframe has one of each)
    'create_config.collector', 'create_config.learner', 'create_config.evaluator', 'create_config.commander',
)
#: model keys of DI-engine's models that a policy's acframe model does not take (their heads are linear)
DING_MODEL_KEYS_BY_POLICY: Dict[str, Tuple[str, ...]] = {
    'acer': ('actor_head_hidden_size', 'critic_head_hidden_size', 'actor_head_layer_num', 'critic_head_layer_num'),
}
#: what ``get_path`` returns for an absent path
MISSING = object()


def translate_ding_config(main: dict, create: dict, defaults_of: Callable[[str], dict],
                          learner_num: Any = None, cuda: Any = None,
                          renamed: Optional[List[Tuple[str, str]]] = None,
                          aliased: Optional[Dict[str, str]] = None) -> Tuple[dict, dict]:
    """DI-engine's ``(main_config, create_config)`` in acframe's keys (see the module docstring).

    ``main``/``create`` are plain copies the caller owns (changed in place and returned); ``defaults_of(policy_type)``
    gives every acframe key of a policy (``compile.default_config``). An acframe config passes through unchanged.
    ``learner_num``: ``parallel.learner_num`` as the command line gives it (None: not given), the number of ranks a
    DI-engine ``multi_gpu=True`` file runs on (its launcher's ``--nproc_per_node``). ``cuda``: ``policy.cuda`` as the
    command line gives it (None: not given; given, it decides the device and the file's is not read).
    ``renamed``: a list that takes each former key read as its new name ``(old, new)``, for the caller to warn once
    the config compiles (None: warn here). ``aliased``: a dict that takes each DI-engine key read under acframe's name
    (``{acframe key: the file's key}``), for an error about the acframe key to name the one the file wrote.
    """
    unused: List[str] = []
    create_imports = _env_import_names(create)
    main_imports = _names(main.get('import_names'))
    all_imports = _names(create.get('import_names')) + create_imports + main_imports
    from_dizoo = any(_is_dizoo(n) for n in all_imports)
    if create_imports or 'import_names' in create or main_imports:
        create.pop('import_names', None)
        kept = _drop_dizoo(all_imports)
        main.pop('import_names', None)
        create['import_names'] = kept
        from ..registry import import_names
        import_names(kept)  # a custom policy must be registered before its defaults are read
    for section in ('collector', 'learner', 'evaluator', 'commander'):
        if section in create:
            create.pop(section)
            unused.append(f'create_config.{section}')
    policy_type = _section(create, 'policy').get('type') or _section(main, 'policy').get('type') or ''
    if not isinstance(policy_type, str) or not policy_type:
        return main, create  # compile_config says what is missing
    valid = leaf_paths(defaults_of(policy_type))
    _translate_env(main, create, from_dizoo)
    _check_reward_model(main, create)
    _translate_multi_gpu(main, learner_num)
    _translate_activation(main)
    if from_dizoo:
        if cuda is None:
            _cuda_if_available(main)
        _translate_image_encoder(main)
        _translate_exp_name(main)
    _translate_lr_scheduler(main, policy_type, defaults_of)
    _translate_buffer(main, create, valid)
    _check_on_policy(main, policy_type, valid)
    _translate_renamed(main, valid, renamed)
    _translate_keys(main, policy_type, valid, aliased)
    if from_dizoo:
        _round_n_sample(main, defaults_of(policy_type))
        _translate_trajectory_buffer_size(main, policy_type, defaults_of(policy_type))
    unused += _drop_unused(main, policy_type, valid)
    if unused:
        by_hint: Dict[str, List[str]] = {}
        for key in unused:
            if key in DING_HINTS:
                by_hint.setdefault(DING_HINTS[key], []).append(key)
        hints = '; '.join(f"for {', '.join(keys)}: {hint}" for hint, keys in by_hint.items())
        logger.warning("acframe: warning: DI-engine keys acframe has no use for, ignored: %s (%sdocs/from_di_engine.md "
                       "says why)", ', '.join(unused), f"{hints}; " if hints else '')
    return main, create


def _section(tree: dict, name: str) -> dict:
    value = tree.get(name)
    return value if isinstance(value, dict) else {}


# ---- import names and env ----------------------------------------------------------------------------
def _names(value: Any) -> List[str]:
    from .run_folder import module_names  # (run_folder imports compile, which imports this module)

    return module_names(value, 'import_names')


#: create_config's sections where DI-engine lists the modules that register a component (its env, policy, env manager)
IMPORT_SECTIONS = ('env', 'policy', 'env_manager', 'replay_buffer')


def section_import_names(create: dict, pop: bool = False) -> List[str]:
    """The modules ``create_config.{env,policy,env_manager,replay_buffer}.import_names`` name (DI-engine's place for
    the module of a user's env, policy, env manager or buffer; taken out of ``create`` with ``pop``)."""
    from .run_folder import module_names  # (run_folder imports compile, which imports this module)

    names: List[str] = []
    for key in IMPORT_SECTIONS:
        section = create.get(key)
        if isinstance(section, dict) and 'import_names' in section:
            value = section.pop('import_names') if pop else section['import_names']
            names += module_names(value, f"config key 'create_config.{key}.import_names'")
    return names


def _env_import_names(create: dict) -> List[str]:
    return section_import_names(create, pop=True)


def _is_dizoo(name: str) -> bool:
    """DI-engine's own modules (``dizoo.*`` envs, ``ding.*`` policies and env managers): acframe has its own."""
    return name in ('dizoo', 'ding') or name.startswith(('dizoo.', 'ding.'))


def _drop_dizoo(names: List[str]) -> List[str]:
    dizoo = [n for n in names if _is_dizoo(n)]
    envs = sorted({n for n in dizoo if n.split('.')[0] == 'dizoo'})
    if envs:
        logger.warning("acframe: note: DI-engine's %s not imported: acframe builds these envs itself with gymnasium",
                       ', '.join(envs))
    if set(dizoo) - set(envs):
        logger.warning("acframe: note: DI-engine's %s not imported: acframe has its own policies, env managers and replay buffers",
                       ', '.join(sorted(set(dizoo) - set(envs))))
    kept = []
    for name in names:
        if name not in dizoo and name not in kept:
            kept.append(name)
    return kept


def _translate_env(main: dict, create: dict, from_dizoo: bool) -> None:
    env_main = main.setdefault('env', {})
    if not isinstance(env_main, dict):
        return
    create_env = create.get('env') if isinstance(create.get('env'), dict) else {}
    env_type = create_env.get('type')
    if isinstance(env_type, str) and env_type in DING_ENV_TYPES:
        create_env['type'] = 'gym'
        env_main.setdefault('env_id', DING_ENV_TYPES[env_type])
    elif isinstance(env_type, str) and env_type in DING_ENV_ID_TYPES:
        create_env['type'] = 'gym'
        (_translate_atari if env_type == 'atari' else _translate_mujoco)(main, env_main)
    elif from_dizoo and isinstance(env_type, str) and env_type not in _registered_envs():
        raise ConfigError(f"create_config.env.type '{env_type}' is a DI-engine env that acframe does not map (it maps "
                          f"{', '.join([*DING_ENV_TYPES, *DING_ENV_ID_TYPES])}); set create_config.env.type='gym' and "
                          f"env.env_id to a gymnasium id")
    if isinstance(env_main.get('manager'), dict):  # DI-engine's manager settings; acframe's env.manager is a name
        env_main['_ding_manager'] = env_main.pop('manager')
    for key, acframe_key in (('norm_obs', 'policy.model.obs_norm=True'), ('norm_reward', 'policy.learn.reward_norm=True')):
        value = env_main.get(key)
        if isinstance(value, dict) and value.get('use_norm'):  # use_norm=False is dropped with the unused keys
            raise ConfigError(f"config key 'env.{key}.use_norm' = True is DI-engine's env wrapper; acframe normalizes "
                              f"inside the policy (saved with it): set {acframe_key} (where the policy has it) and "
                              f"env.{key}.use_norm=False")
    if env_main.get('rew_clip') is True:
        logger.warning("acframe: note: env.rew_clip=True (DI-engine's BipedalWalker env raises the -100 fall penalty to "
                       "-10) is not applied: acframe keeps gymnasium's rewards, so returns of episodes that fall differ by 90")
    env_id = env_main.get('env_id')
    if isinstance(env_id, str) and _BOX2D_V2.match(env_id):
        new = env_id[:-1] + '3'
        logger.warning("acframe: note: env.env_id '%s' is gym's id; gymnasium 1.x has '%s' (same task), used instead",
                       env_id, new)
        env_main['env_id'] = new
    manager = create.get('env_manager')
    if isinstance(manager, dict) and isinstance(manager.get('type'), str) and manager['type'] in DING_ENV_MANAGERS:
        manager['type'] = DING_ENV_MANAGERS[manager['type']]


def _translate_atari(main: dict, env_main: dict) -> None:
    """DI-engine's ``type='atari'``: gym's ``<Game>NoFrameskip-v4`` through its ``wrap_deepmind`` chain is acframe's
    ``ALE/<Game>-v5`` through ``env.atari`` with the same settings (keys the file sets under ``env.atari`` win)."""
    env_id = env_main.get('env_id')
    found = _ATARI_NOFRAMESKIP.match(env_id) if isinstance(env_id, str) else None
    if found is None:
        raise ConfigError(f"env.env_id {env_id!r} with create_config.env.type='atari': acframe maps DI-engine's "
                          f"'<Game>NoFrameskip-v4' ids (e.g. 'PongNoFrameskip-v4'); name one, or set "
                          f"create_config.env.type='gym', env.env_id='ALE/<Game>-v5' and env.atari.enable=True")
    frame_stack = env_main.pop('frame_stack', 4)
    if isinstance(frame_stack, bool) or not isinstance(frame_stack, int) or frame_stack < 1:
        raise ConfigError(f"config key 'env.frame_stack' = {frame_stack!r} must be an int >= 1 (frames stacked per "
                          f"observation)")
    atari = env_main.setdefault('atari', {})
    if not isinstance(atari, dict):
        raise ConfigError(f"config key 'env.atari' must be a dict (a section of keys), got {atari!r}")
    sticky = 0.0 if found.group('version') == '4' else 0.25  # gym's -v0 ids repeat the last action with p=0.25
    for key, value in (('enable', True), ('frame_skip', 4), ('repeat_action_probability', sticky), ('noop_max', 30),
                       ('screen_size', 84), ('grayscale', True), ('frame_stack', frame_stack), ('episodic_life', True),
                       ('fire_reset', True), ('clip_reward', True)):
        atari.setdefault(key, value)
    new = f"ALE/{found.group('game')}-v5"
    env_main['env_id'] = new
    logger.warning("acframe: note: env.env_id '%s' (DI-engine's atari env) is '%s' with env.atari: 4 frames max-pooled "
                   "per step, no sticky actions%s, %d stacked 84x84 grey frames, life loss and reward clipping in training",
                   env_id, new, '' if sticky == 0 else ' (p=0.25, as gym\'s -v0)', atari['frame_stack'])


def _translate_mujoco(main: dict, env_main: dict) -> None:
    """DI-engine's ``type='mujoco'``: gym's ``<Task>-v2/v3`` ids are gymnasium's ``-v5`` (one note); a model
    ``obs_shape`` of a v3 task whose v5 observation is smaller (Ant, Humanoid) is left to the env (one note)."""
    env_id = env_main.get('env_id')
    if not isinstance(env_id, str) or not _MUJOCO_OLD.match(env_id):
        if isinstance(env_id, str) and env_id.endswith('-v5'):
            return
        raise ConfigError(f"env.env_id {env_id!r} with create_config.env.type='mujoco': acframe maps gym's MuJoCo ids "
                          f"('HalfCheetah-v3', 'Hopper-v2', ...) to gymnasium's -v5; name one of those or a '-v5' id")
    task = env_id.rsplit('-', 1)[0]
    new = f'{task}-v5'
    env_main['env_id'] = new
    logger.warning("acframe: note: env.env_id '%s' is gym's (mujoco-py); gymnasium 1.x has '%s' (the same task), "
                   "used instead", env_id, new)
    sizes = _MUJOCO_V5_OBS.get(task)
    if sizes is not None and get_path(main, 'policy.model.obs_shape') in (sizes[0], [sizes[0]], (sizes[0],)):
        pop_path(main, 'policy.model.obs_shape')
        logger.warning("acframe: note: policy.model.obs_shape=%d is %s's; %s observes %d values (no contact forces "
                       "of the world body): the model is built for %d", sizes[0], env_id, new, sizes[1], sizes[1])


def _check_reward_model(main: dict, create: dict) -> None:
    """DI-engine's reward models (GCL, TREX, RND, ICM ...: ``reward_model`` in either config) are not in acframe."""
    for where, tree in (('create_config.reward_model', create), ('reward_model', main)):
        value = tree.get('reward_model')
        if value is not None:
            kind = value.get('type') if isinstance(value, dict) else None
            raise ConfigError(f"config key '{where}'{f' (type {kind!r})' if kind else ''} is one of DI-engine's reward models "
                              f"(GCL, TREX, RND, ICM ...), which acframe does not have; remove reward_model from both "
                              f"configs to train on the env's own rewards")


def _translate_exp_name(main: dict) -> None:
    """DI-engine's ``exp_name`` is a path (``'impala_log/pong_impala_seed0'``); acframe's is a folder name: the last
    part of the path, with a note naming ``--exp-dir`` for DI-engine's place."""
    name = main.get('exp_name')
    if not isinstance(name, str) or '/' not in name or name.startswith('/'):
        return
    last = name.rstrip('/').rsplit('/', 1)[-1]
    if last in ('', '.', '..'):
        return  # check_exp_name says what is wrong
    main['exp_name'] = last
    logger.warning("acframe: note: exp_name '%s' is a path in DI-engine; acframe's exp_name is a folder name: '%s' "
                   "(pass --exp-dir %s to run where DI-engine does)", name, last, name)


def _round_n_sample(main: dict, defaults: dict) -> None:
    """DI-engine collects ``n_sample`` in all over its collector envs, whatever their number; acframe's collector
    steps every env alike, so ``n_sample`` must be a multiple of ``env.collector_env_num``: round it up, with a note
    (a DI-engine file's 2048 samples over 10 envs become 2050)."""
    n_sample = get_path(main, 'policy.collect.n_sample')
    envs = get_path(main, 'env.collector_env_num')
    if envs is MISSING:
        envs = defaults['env']['collector_env_num']
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (n_sample, envs)) or n_sample % envs == 0:
        return  # absent, already a multiple, or a bad value that compile_config names
    rounded = -(-n_sample // envs) * envs
    _set(main, 'policy.collect.n_sample', rounded)
    logger.warning("acframe: note: policy.collect.n_sample %d is not a multiple of the %d collector envs (acframe steps "
                   "every env alike): %d samples are collected each time", n_sample, envs, rounded)


def _translate_trajectory_buffer_size(main: dict, policy_type: str, defaults: dict) -> None:
    """DI-engine's ACER stores trajectories of ``unroll_len`` steps and counts ``replay_buffer_size`` in them;
    acframe's episodic buffer counts transitions: a DI-engine file's size is multiplied by its unroll length, with a
    note (its Pong file's 3000 trajectories of 64 steps hold 192,000 transitions)."""
    size = get_path(main, 'policy.other.replay_buffer.replay_buffer_size')
    if policy_type != 'acer' or size is MISSING:
        return
    unroll = get_path(main, 'policy.other.replay_buffer.unroll_len')
    if unroll is MISSING:
        unroll = get_path(defaults, 'policy.other.replay_buffer.unroll_len')
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (size, unroll)):
        return  # compile_config names the bad value
    _set(main, 'policy.other.replay_buffer.replay_buffer_size', size * unroll)
    logger.warning("acframe: note: policy.other.replay_buffer.replay_buffer_size %d counts DI-engine's %d-step "
                   "trajectories; acframe's episodic buffer counts transitions: %d", size, unroll, size * unroll)


def _translate_lr_scheduler(main: dict, policy_type: str, defaults_of: Callable[[str], dict]) -> None:
    """DI-engine's PPO ``learn.lr_scheduler=dict(epoch_num, min_lr_lambda=0)`` decays the learning rate linearly to 0
    over ``epoch_num`` collections (one step per collection); acframe's ``learn.lr_decay_iters`` decays it to 0 over
    that many gradient steps: ``epoch_num`` x ``epoch_per_collect`` x ceil(``n_sample`` / ``batch_size``)."""
    value = get_path(main, 'policy.learn.lr_scheduler')
    if value is MISSING:
        return
    if value is None:  # DI-engine's default: no scheduler
        pop_path(main, 'policy.learn.lr_scheduler')
        return
    defaults = defaults_of(policy_type)
    if policy_type != 'ppo' or get_path(defaults, 'policy.learn.lr_decay_iters') is MISSING:
        return  # not DI-engine's PPO key here: compile_config names it as unknown
    epochs, floor = (value.get('epoch_num'), value.get('min_lr_lambda', 0)) if isinstance(value, dict) else (None, None)
    if (not isinstance(value, dict) or set(value) - {'epoch_num', 'min_lr_lambda'} or isinstance(epochs, bool)
            or not isinstance(epochs, int) or epochs < 1):
        raise ConfigError(f"config key 'policy.learn.lr_scheduler' = {value!r} must be dict(epoch_num=N, "
                          f"min_lr_lambda=0) (DI-engine's linear decay over N collections)")
    if floor != 0:
        raise ConfigError(f"config key 'policy.learn.lr_scheduler.min_lr_lambda' = {floor!r}: acframe decays the "
                          f"learning rate to 0 (policy.learn.lr_decay_iters); set min_lr_lambda=0 or remove lr_scheduler")

    def setting(path: str) -> Any:
        given = get_path(main, path)
        return get_path(defaults, path) if given is MISSING else given

    sizes = [setting(p) for p in ('policy.learn.epoch_per_collect', 'policy.collect.n_sample', 'policy.learn.batch_size')]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
        return  # compile_config names the bad size; lr_scheduler is then an unknown key
    epoch_per_collect, n_sample, batch_size = sizes
    iters = epochs * epoch_per_collect * -(-n_sample // batch_size)
    current = get_path(main, 'policy.learn.lr_decay_iters')
    if current is not MISSING and current != iters:
        raise ConfigError(f"config keys 'policy.learn.lr_scheduler' ({epochs} collections = {iters} gradient steps) and "
                          f"'policy.learn.lr_decay_iters' ({current!r}) differ; keep one")
    _set(main, 'policy.learn.lr_decay_iters', iters)
    pop_path(main, 'policy.learn.lr_scheduler')
    logger.warning("acframe: note: policy.learn.lr_scheduler (linear to 0 over %d collections) is "
                   "policy.learn.lr_decay_iters=%d (%d epochs x %d minibatches per collection), decayed per gradient step",
                   epochs, iters, epoch_per_collect, -(-n_sample // batch_size))


#: DI-engine's batch keys that a data-parallel run counts per rank (acframe counts them for the whole run)
PER_RANK_KEYS = ('env.collector_env_num', 'policy.collect.n_sample', 'policy.learn.batch_size',
                 'policy.other.replay_buffer.replay_buffer_size')


def _translate_multi_gpu(main: dict, learner_num: Any) -> None:
    """DI-engine's ``multi_gpu=True`` asks for its data-parallel learners, as many as its launcher starts
    (``torch.distributed.launch --nproc_per_node``), each with the file's per-rank batch keys. The file does not say
    how many: with ``parallel.learner_num=N`` given (on the command line, as the launcher's flag), the key is dropped
    and the per-rank keys become acframe's whole-run ones (N times; docs/ddp.md); without it, it is refused in one
    line naming that key."""
    asked = [key for key in ('policy.multi_gpu', 'policy.learn.multi_gpu')
             if get_path(main, key) not in (MISSING, False, None)]
    if not asked:
        return
    key = asked[0]
    if isinstance(learner_num, bool) or not isinstance(learner_num, int) or learner_num < 1:
        raise ConfigError(f"config key '{key}' = {get_path(main, key)!r} asks for DI-engine's data-parallel learners, whose "
                          f"number its launcher sets (--nproc_per_node); give it as parallel.learner_num=N (e.g. "
                          f"acframe -c FILE parallel.learner_num=2: acframe starts the N ranks and multiplies the file's "
                          f"per-rank collector_env_num, n_sample, batch_size and replay_buffer_size by N; docs/ddp.md), "
                          f"or set {key}=False for one learner")
    for name in asked:
        pop_path(main, name)
    scaled = []
    for name in PER_RANK_KEYS:
        value = get_path(main, name)
        if isinstance(value, int) and not isinstance(value, bool):
            _set(main, name, value * learner_num)
            scaled.append(f"{name.rsplit('.', 1)[-1]} {value} -> {value * learner_num}")
    logger.warning("acframe: note: %s=True with parallel.learner_num=%d: DI-engine's per-rank batch keys are this run's "
                   "whole-run keys times %d (%s; docs/ddp.md)", key, learner_num, learner_num,
                   ', '.join(scaled) or 'none set in the file')


def _translate_activation(main: dict) -> None:
    """A ``torch.nn`` activation module (class or instance) under ``policy.model`` -> acframe's activation name,
    so that the compiled config (and the run folder's config.json) holds the name, never the object."""
    model = get_path(main, 'policy.model')
    if not isinstance(model, dict):
        return
    for key, value in list(model.items()):
        if 'activation' not in key or isinstance(value, (str, type(None))):
            continue
        cls = value if isinstance(value, type) else type(value)
        module = getattr(cls, '__module__', '') or ''
        if not module.startswith('torch.nn'):
            continue  # not a torch.nn module: compile_config says what is wrong with it
        name = DING_ACTIVATIONS.get(cls.__name__)
        if name is not None and not isinstance(value, type) and repr(value) != repr(cls()):
            name = None  # an instance with its own parameters (ELU(alpha=0.5)) is not acframe's activation
        if name is None:
            shown = cls.__name__ if isinstance(value, type) else repr(value)
            raise ConfigError(f"config key 'policy.model.{key}' = torch.nn {shown}: acframe's models take "
                              f"{', '.join(repr(v) for v in DING_ACTIVATIONS.values())} ({', '.join(f'nn.{k}()' for k in DING_ACTIVATIONS)}); "
                              f"set policy.model.{key} to one of those names")
        model[key] = name
        logger.warning("acframe: note: policy.model.%s = torch.nn %s is read as %r (the config holds the name)",
                       key, cls.__name__ + ('' if isinstance(value, type) else '()'), name)


def _translate_image_encoder(main: dict) -> None:
    """DI-engine's VAC encodes a 3-dim ``obs_shape`` with its ConvEncoder: 3 conv layers (8x8/4, 4x4/2, 3x3/1, ReLU;
    channels ``encoder_hidden_size_list[:3]``) and a linear layer of ``encoder_hidden_size_list[-1]`` units. That is
    acframe's ``nature_cnn`` encoder with those channels and one hidden layer (``encoder_hidden_size_list[-1:]``)."""
    model = get_path(main, 'policy.model')
    if not isinstance(model, dict) or 'encoder' in model or model.get('impala_cnn_encoder'):
        return
    shape = model.get('obs_shape')
    if not (isinstance(shape, (list, tuple)) and len(shape) == 3):
        return
    hidden = model.get('encoder_hidden_size_list', [128, 128, 64])  # DI-engine VAC's default
    if not isinstance(hidden, (list, tuple)) or len(hidden) not in (3, 4):
        raise ConfigError(f"config key 'policy.model.encoder_hidden_size_list' = {hidden!r}: for image observations "
                          f"DI-engine builds 3 conv layers and a linear layer from 3 or 4 sizes (more add residual "
                          f"blocks, which acframe does not build); give 3 or 4 sizes, or set policy.model.encoder")
    model['encoder'] = 'nature_cnn'
    model['encoder_channels'] = list(hidden[:3])
    model['encoder_hidden_size_list'] = [hidden[-1]]
    logger.warning("acframe: note: policy.model.encoder_hidden_size_list=%s for %s images is DI-engine's conv encoder: "
                   "acframe's nature_cnn with encoder_channels=%s and encoder_hidden_size_list=%s",
                   list(hidden), 'x'.join(str(v) for v in shape), list(hidden[:3]), [hidden[-1]])


#: a uniform buffer -> its prioritized version (what DI-engine's ``priority=True`` asks of it)
PRIORITIZED = {'fifo': 'prioritized', 'episodic': 'episodic_prioritized'}
#: DI-engine's priority keys of its buffer middleware -> acframe's prioritized buffers' keys
PRIORITY_ALIASES = {'priority_power_factor': 'alpha', 'IS_weight_power_factor': 'beta',
                    'IS_weight_anneal_train_iter': 'anneal_step'}


#: DI-engine's replay buffer types read as the policy's own default buffer: its plain FIFO ('naive'), the FIFO whose
#: priorities its priority switches turn on ('advanced'), and its newer buffer API's FIFO ('deque')
DING_BUFFERS = ('naive', 'advanced', 'deque')


def _translate_buffer(main: dict, create: dict, valid: Dict[str, Any]) -> None:
    """``replay_buffer.type`` one of ``DING_BUFFERS`` -> the policy's default buffer type; DI-engine's
    priority switches -> a prioritized buffer (``_translate_priority``); the keys the buffer declares are valid."""
    default_type = valid.get('policy.other.replay_buffer.type', MISSING)
    create_buffer = create.pop('replay_buffer', None)
    if create_buffer is not None:
        if not isinstance(create_buffer, dict) or set(create_buffer) - {'type', 'import_names'}:
            raise ConfigError(f"create_config.replay_buffer must be dict(type=...), got {create_buffer!r}")
        if 'type' in create_buffer:
            _set(main, 'policy.other.replay_buffer.type', create_buffer['type'], keep_existing=True)
    buffer_type = get_path(main, 'policy.other.replay_buffer.type')
    if isinstance(buffer_type, str) and buffer_type in DING_BUFFERS and default_type is not MISSING:
        _set(main, 'policy.other.replay_buffer.type', default_type)
    _translate_priority(main, default_type)
    from .compile import buffer_defaults  # compile imports this module

    buffer_type = get_path(main, 'policy.other.replay_buffer.type')
    own, _ = buffer_defaults(default_type if buffer_type is MISSING else buffer_type)
    valid.update({f'policy.other.replay_buffer.{k}': v for k, v in leaf_paths(own).items()})


def _translate_priority(main: dict, default_type: Any) -> None:
    """DI-engine's ``priority=True`` / ``priority_IS_weight`` (in ``policy`` or ``policy.other.replay_buffer``): the
    policy's buffer made prioritized, with one note; ``priority=False`` drops them (the buffer stays uniform)."""
    switches = {}
    for name in ('priority', 'priority_IS_weight'):
        for path in (f'policy.{name}', f'policy.other.replay_buffer.{name}'):
            value = get_path(main, path)
            if value is MISSING:
                continue
            pop_path(main, path)
            if not isinstance(value, bool):
                raise ConfigError(f"config key '{path}' = {value!r} must be True or False (DI-engine's prioritized replay switch)")
            if name in switches and switches[name] != value:
                raise ConfigError(f"'policy.{name}' and 'policy.other.replay_buffer.{name}' differ; keep one")
            switches[name] = value
    rb = get_path(main, 'policy.other.replay_buffer')
    if isinstance(rb, dict):
        for ding_name, name in PRIORITY_ALIASES.items():
            if ding_name in rb:
                if name in rb and rb[name] != rb[ding_name]:
                    raise ConfigError(f"'policy.other.replay_buffer.{ding_name}' and '...replay_buffer.{name}' differ; keep one")
                rb[name] = rb.pop(ding_name)
    if not switches.get('priority'):
        return
    buffer_type = get_path(main, 'policy.other.replay_buffer.type')
    buffer_type = default_type if buffer_type is MISSING else buffer_type
    if not buffer_type:  # an on-policy policy (A2C, PPO) learns from each rollout once: it has no replay buffer
        raise ConfigError("policy.priority=True asks for prioritized replay, but this policy is on-policy and has no "
                          "replay buffer (it learns from each rollout once); set policy.priority=False")
    if buffer_type in PRIORITIZED:
        _set(main, 'policy.other.replay_buffer.type', PRIORITIZED[buffer_type])
        logger.warning("acframe: note: policy.priority=True: replay_buffer.type '%s' is read as '%s' (prioritized replay, "
                       "docs/replay.md)", buffer_type, PRIORITIZED[buffer_type])
    elif buffer_type not in PRIORITIZED.values():
        raise ConfigError(f"policy.priority=True asks for prioritized replay, but replay_buffer.type {buffer_type!r} has no "
                          f"prioritized version in acframe ({', '.join(f'{k} -> {v}' for k, v in PRIORITIZED.items())}); "
                          f"set policy.priority=False or a prioritized buffer type")
    if 'priority_IS_weight' in switches:
        _set(main, 'policy.other.replay_buffer.is_weight', switches['priority_IS_weight'])


def _cuda_if_available(main: dict) -> None:
    """DI-engine reads ``policy.cuda=True`` as 'CUDA when available' (``cfg.cuda and torch.cuda.is_available()``);
    acframe refuses an unavailable device, so a DI-engine file falls back to the CPU here, with a note."""
    if get_path(main, 'policy.cuda') is not True:
        return
    import torch
    if not torch.cuda.is_available():
        logger.warning("acframe: note: policy.cuda=True but CUDA is not available: running on the CPU, as DI-engine does")
        main['policy']['cuda'] = False


def _registered_envs() -> List[str]:
    from ..registry import ENV_REGISTRY
    return list(ENV_REGISTRY.names())


# ---- keys ----------------------------------------------------------------------------------------------
def translate_override(key: str, value: Any, policy_type: str, valid: Dict[str, Any],
                       renamed: Optional[List[Tuple[str, str]]] = None) -> Optional[str]:
    """The key a command-line override ``key=value`` sets: a renamed key's new name (with a ``ConfigWarning``, or
    ``(old, new)`` added to ``renamed`` for the caller to warn), None for ``policy.on_policy`` that agrees with the
    policy (nothing to set), else ``key`` itself."""
    if key == 'policy.on_policy' and key not in valid:
        _require_on_policy(value, policy_type)
        return None
    new = RENAMED.get(key)
    if new is not None and key not in valid and new in valid:
        _note_renamed(key, new, renamed)
        return new
    return key


def _check_on_policy(main: dict, policy_type: str, valid: Dict[str, Any]) -> None:
    """``policy.on_policy`` (DI-engine's files state it): dropped when it agrees with the policy class."""
    value = get_path(main, 'policy.on_policy')
    if value is MISSING or 'policy.on_policy' in valid:
        return
    _require_on_policy(value, policy_type)
    pop_path(main, 'policy.on_policy')


def _require_on_policy(value: Any, policy_type: str) -> None:
    from ..registry import POLICY_REGISTRY

    actual = bool(getattr(POLICY_REGISTRY.get(policy_type), 'on_policy', False))
    if value is not actual:
        kind = 'on-policy (it learns only from data of its current weights)' if actual else 'off-policy (from replayed data)'
        raise ConfigError(f"config key 'policy.on_policy' = {value!r}, but policy '{policy_type}' learns {kind}: the "
                          f"policy decides this, not the config; remove policy.on_policy (or set it to {actual})")


def warn_renamed(old: str, new: str, stacklevel: int = 2) -> None:
    """The ``ConfigWarning`` for a former key name read as ``new`` (``stacklevel`` as ``warnings.warn``'s, from
    the caller)."""
    warnings.warn(f"config key '{old}' is read as '{new}', its name in acframe (and DI-engine's PPO); rename it",
                  ConfigWarning, stacklevel=stacklevel + 1)


def _note_renamed(old: str, new: str, renamed: Optional[List[Tuple[str, str]]]) -> None:
    if renamed is None:
        warn_renamed(old, new, stacklevel=4)  # (the caller of translate_ding_config / translate_override)
    else:
        renamed.append((old, new))


def _translate_renamed(main: dict, valid: Dict[str, Any], renamed: Optional[List[Tuple[str, str]]]) -> None:
    for old, new in RENAMED.items():
        value = get_path(main, old)
        if value is MISSING or old in valid or new not in valid:
            continue
        current = get_path(main, new)
        if current is not MISSING and current != value:
            raise ConfigError(f"config keys '{old}' ({value!r}, its former name) and '{new}' ({current!r}) differ; "
                              f"keep '{new}'")
        _note_renamed(old, new, renamed)
        _set(main, new, value)
        pop_path(main, old)


def _translate_keys(main: dict, policy_type: str, valid: Dict[str, Any],
                    aliased: Optional[Dict[str, str]] = None) -> None:
    for ding_key, key, policies, transform in ALIASES:
        if policies is ON_POLICY:
            if not _on_policy(policy_type):
                continue
        elif policies is not None and policy_type not in policies:
            continue
        if ding_key in valid or not (key in valid or key.startswith('policy.model.')):
            continue
        value = get_path(main, ding_key)
        if value is MISSING:
            continue
        if transform is not None:
            try:
                value = transform(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"config key '{ding_key}' = {value!r} must be a number") from exc
        current = get_path(main, key)
        if current is not MISSING and current != value:
            raise ConfigError(f"config keys '{ding_key}' ({get_path(main, ding_key)!r}) and '{key}' ({current!r}) mean the same "
                              f"thing in acframe but differ; keep one (docs/from_di_engine.md)")
        _set(main, key, value)
        pop_path(main, ding_key)
        if aliased is not None:
            aliased.setdefault(key, ding_key)
    for ding_key in UNROLL_KEYS:  # left over: the policy sets its samples' length itself
        value = get_path(main, ding_key)
        if value is MISSING or ding_key in valid:
            continue
        if value != 1:
            raise ConfigError(f"config key '{ding_key}' = {value!r}: policy '{policy_type}' does not declare it (its "
                              f"train samples' length is its own), so it takes only 1; remove the key")
        pop_path(main, ding_key)
    if policy_type not in DING_MODEL_KEYS_BY_POLICY:
        _translate_head_layers(main)


def _translate_head_layers(main: dict) -> None:
    """DI-engine's ``*_head_layer_num``: 0 is a linear head (acframe's ``*_head_hidden_size=0``), N >= 1 is N hidden
    layers of ``*_head_hidden_size`` units (the ``vac`` model's ``*_head_layer_num``; 1 is its default)."""
    for head in ('actor', 'critic'):
        layers = get_path(main, f'policy.model.{head}_head_layer_num')
        if layers is MISSING:
            continue
        if isinstance(layers, bool) or not isinstance(layers, int) or layers < 0:
            raise ConfigError(f"config key 'policy.model.{head}_head_layer_num' = {layers!r} must be a whole number "
                              f">= 0 (the hidden layers of the head)")
        if layers == 0:
            _set(main, f'policy.model.{head}_head_hidden_size', 0)
        if layers <= 1:
            pop_path(main, f'policy.model.{head}_head_layer_num')


def _on_policy(policy_type: str) -> bool:
    """Whether the registered policy ``policy_type`` is on-policy (False for a name that is not registered)."""
    from ..errors import RegistryError
    from ..registry import POLICY_REGISTRY

    if policy_type in ('a2c', 'ppo'):  # (acframe's own, known without importing them)
        return True
    try:  # a user's policy is loaded already (its module registered it); a built-in one is not imported for this
        return POLICY_REGISTRY.is_loaded(policy_type) and bool(getattr(POLICY_REGISTRY.get(policy_type), 'on_policy', False))
    except RegistryError:
        return False


def _leaves_left(value: Any, path: str) -> List[str]:
    """The paths of what is left of a DI-engine key once its translated keys were taken out: itself for a value, the
    leaves of a dict (none for a dict all of whose keys were read)."""
    if not isinstance(value, dict):
        return [path]
    return [f"{path}.{leaf}" for leaf, left in leaf_paths(value).items() if left != {}]


def _drop_unused(main: dict, policy_type: str, valid: Dict[str, Any]) -> List[str]:
    """Remove DI-engine keys that are not keys of this policy; return the paths of what was left of them (a setting
    of theirs that was read, e.g. ``env.manager.step_timeout``, is not named)."""
    dropped = []
    if get_path(main, 'env._ding_manager') is not MISSING:
        dropped += _leaves_left(get_path(main, 'env._ding_manager'), 'env.manager')
        pop_path(main, 'env._ding_manager')
    for path in DING_KEYS:
        if path.startswith('create_config.') or path in valid or get_path(main, path) is MISSING:
            continue
        near = DING_DICT_KEYS_NEAR_LISTS.get(path)
        if near is not None and isinstance(get_path(main, path), (list, tuple)) and get_path(main, path):
            raise ConfigError(f"config key '{path}' = {get_path(main, path)!r} is a list, and DI-engine's {path} is a "
                              f"dict of settings; did you mean '{near}'?")
        if any(v.startswith(path + '.') for v in valid):
            continue  # a section acframe has too: its keys are checked as acframe's
        dropped += _leaves_left(get_path(main, path), path)
        pop_path(main, path)
    for key in DING_MODEL_KEYS_BY_POLICY.get(policy_type, ()):
        if get_path(main, f'policy.model.{key}') is not MISSING:
            pop_path(main, f'policy.model.{key}')
            dropped.append(f'policy.model.{key}')
    return dropped


def leaf_paths(tree: dict, prefix: str = '') -> Dict[str, Any]:
    """``{dotted path: value}`` of every leaf of ``tree`` (an empty dict is a leaf: a free-form mapping)."""
    out: Dict[str, Any] = {}
    for key, value in tree.items():
        path = f'{prefix}{key}'
        if isinstance(value, dict) and value:
            out.update(leaf_paths(value, path + '.'))
        else:
            out[path] = value
    return out


def get_path(tree: dict, path: str) -> Any:
    """The value at the dotted ``path`` of a nested dict, ``MISSING`` where it is absent."""
    node: Any = tree
    for part in path.split('.'):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def _set(tree: dict, path: str, value: Any, keep_existing: bool = False) -> None:
    *parents, last = path.split('.')
    node = tree
    for depth, part in enumerate(parents):
        child = node.get(part)
        if child is None and part not in node:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise ConfigError(f"config key '{'.'.join(parents[:depth + 1])}' must be a dict (a section of keys), "
                              f"got {type(child).__name__} {child!r}")
        node = child
    if keep_existing and last in node and node[last] != value:
        raise ConfigError(f"create_config.replay_buffer.type ({value!r}) and '{path}' ({node[last]!r}) differ; keep one")
    node[last] = value


def pop_path(tree: dict, path: str) -> None:
    """Remove the dotted ``path`` of a nested dict (its parents must exist), and the sections it leaves empty."""
    *parents, last = path.split('.')
    node = tree
    chain = []
    for part in parents:
        chain.append((node, part))
        node = node[part]
    node.pop(last, None)
    for parent, part in reversed(chain):  # drop sections the key leaves empty
        if parent[part] == {}:
            parent.pop(part)
        else:
            break
