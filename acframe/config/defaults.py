"""Defaults shared by every run: the experiment, the envs and the workers.

Every key carries a one-line comment above it: ``docs/config_reference.md`` is generated from these
comments (``python -m acframe.config.reference``), so keep one comment per key.
A policy's own defaults (its ``config`` class attribute) are merged on top of ``POLICY_COMMON``.
"""

TOP_LEVEL = dict(
    # (str) Experiment name: the experiment folder is ./<exp_name>_seed<seed> unless --exp-dir is given.
    exp_name='default_experiment',
    # (int > 0) Stop after this many env steps of collection (the training budget).
    max_env_step=10_000_000,
    # (int > 0) Stop after this many learner iterations (the training budget).
    max_train_iter=10_000_000,
    # (int in [0, 2_137_483_647]) Run seed: torch, numpy and every env seed derive from it (the CLI's -s overrides it).
    seed=0,
    # (list) Modules imported before the config is compiled, so their @REGISTRY.register decorators run (also create_config.import_names).
    import_names=[],
    # (str or None) A checkpoint (.pth, or a run folder: its best checkpoint, else its latest) whose model weights a new run starts from; optimizer, counters and envs start fresh (--init-from sets it; --resume ignores it).
    init_from=None,
    # (str in {'serial', 'serial_onpolicy', 'parallel', 'async'} or None) The pipeline this config is written for, which acframe -c runs when no -m is given (an A3C file's 'async'); None: the policy's serial pipeline. An -m or a script's pipeline function that runs another one warns.
    pipeline=None,
)

ENV = dict(
    # (str) Registered env factory, set by create_config.env.type; 'gym' makes env.env_id with gymnasium.
    type='gym',
    # (str) Registered env manager (ENV_MANAGER_REGISTRY), set by create_config.env_manager.type: 'sync' (in-process), 'async' (subprocesses), 'envpool' (EnvPool's C++ threads; extra 'envpool'), or a user's own (an EnvManager or gymnasium VectorEnv subclass, module in import_names).
    manager='sync',
    # (str) A gymnasium id (e.g. 'CartPole-v1') or a registered short name ('cartpole', 'pendulum', ...).
    env_id='CartPole-v1',
    # (dict) Keyword arguments passed to gymnasium.make for every env.
    env_kwargs=dict(),
    # (int in [1, 4096]) Number of envs stepped together by the collector.
    collector_env_num=8,
    # (int in [1, 4096]) Number of envs the evaluator runs its episodes on.
    evaluator_env_num=4,
    # (int in [1, 1_000_000]) Episodes per evaluation; the mean return over them is compared to stop_value.
    n_evaluator_episode=8,
    # (float in [-inf, inf] or None) Training stops (solved) when the evaluation mean return reaches this value; None never stops.
    stop_value=195.0,
    # (float > 0 or None) Watchdog: an env step or reset that takes longer than this many seconds is an error naming the env index and seed (async envs, and every env of a parallel actor or evaluator); None waits forever.
    step_timeout_s=60.0,
    # (str in {'error', 'restart'}) What a step timeout does: 'error' fails the run with one line; 'restart' restarts the parallel actor or evaluator with a warning (counted in parallel.max_restarts; the serial pipelines fail as with 'error').
    on_step_timeout='error',
    # (int in [1, 1_000_000_000] or None) Override the env's time limit (max_episode_steps) of any env factory; None keeps the env's own limit.
    max_episode_steps=None,
    # (int > 0) Evaluation episodes of an env with no time limit (and no max_episode_steps) are truncated after this many steps, so an evaluation cannot hang.
    eval_episode_cap=100_000,
    # (int >= 0) Fresh episodes that must confirm an evaluation that reached stop_value before the run counts as solved; 0 trusts the evaluation alone.
    n_confirm_episode=50,
    # (list or None) Keys of a Dict observation the model sees (vectors only: concatenated; images with vectors: a Dict in this order); None uses all keys, sorted.
    obs_keys=None,
    # (dict) The standard Atari preprocessing of ALE/*-v5 env_ids (acframe.envs.atari; needs the 'atari' extra).
    atari=dict(
        # (bool) Build every env with the Atari chain below (AtariPreprocessing, episodic life, fire reset, reward clip, frame stack).
        enable=False,
        # (int >= 1) Frames each action is repeated for (AtariPreprocessing's frame skip; the last two are max-pooled, as EnvPool does).
        frame_skip=4,
        # (float in [0, 1]) Sticky actions: the ALE repeats the previous action with this probability (v5: 0.25; 0 as in the 2015 papers).
        repeat_action_probability=0.25,
        # (int >= 0) At most this many random no-op frames after a reset (random start states); EnvPool needs >= 1.
        noop_max=30,
        # (int >= 1) Frames are resized to screen_size x screen_size.
        screen_size=84,
        # (bool) Grey frames (True) or RGB ones (False).
        grayscale=True,
        # (int >= 1) Frames stacked into one observation (gymnasium's FrameStackObservation); 1 stacks none.
        frame_stack=4,
        # (bool) A lost life ends the training episode (the game goes on); evaluation plays whole games.
        episodic_life=True,
        # (bool) Press FIRE after a reset in games that need it to start (e.g. Breakout).
        fire_reset=True,
        # (bool) Training rewards are clipped to their sign; evaluation returns are the game's scores.
        clip_reward=True,
    ),
    # (dict) Domain randomization: every collector env is built with its own env parameters, drawn from declared distributions.
    domain_randomization=dict(
        # (bool) Draw the parameters in params for every collector env (False: every env uses env.env_kwargs).
        enable=False,
        # (dict) Parameter -> distribution: dict(dist='normal', mean, std, low, high) | dict(dist='uniform', low, high) | dict(dist='choice', values, p); via='attribute' sets env.unwrapped.<name> instead of a gymnasium.make keyword.
        params=dict(),
        # (int >= 0) Draw new parameters and rebuild the collector envs every this many collections; 0 draws once.
        resample_every=0,
        # (bool) Evaluate on envs with their own drawn parameters too; False evaluates with the nominal parameters (env.env_kwargs).
        apply_to_evaluator=False,
    ),
)

#: ``policy.model`` of a policy class with ``supports_rnn = True`` whose own ``config`` does not declare ``model.rnn``
#: (a user's policy): the recurrent core's keys, checked as the built-in policies' are
RECURRENT_MODEL = dict(
    # (dict) A recurrent core (LSTM/GRU) between the encoder and the heads; the base Policy's modes carry one state per env (docs/custom_policy.md, "A recurrent form").
    rnn=dict(
        # (str in {'lstm', 'gru'} or None) Recurrent core between the encoder and the heads, one hidden state per env carried across steps and reset where an episode starts (docs/recurrent.md); None: feed-forward.
        type=None,
        # (int in [1, 4096]) Units of each recurrent layer (the heads read its output).
        hidden_size=64,
        # (int in [1, 16]) Stacked recurrent layers.
        num_layers=1,
        # (bool) A LayerNorm (learned scale and shift) on the core's input, the encoder's features at each step, so their scale cannot drift (docs/recurrent.md).
        input_norm=False,
    ),
)

POLICY_COMMON = dict(
    # (str) Registered policy name; set by create_config.policy.type.
    type='',
    # (bool) Run the networks on CUDA (falls back with an error when CUDA is unavailable).
    cuda=False,
    # (dict) Keyword arguments of the model (VAC: encoder_hidden_size_list, activation 'tanh'/'relu', obs_norm, obs_norm_clip, ...); obs_shape, action_shape and action_space are filled from the env when absent.
    model=dict(),
    learn=dict(
        learner=dict(
            # (int > 0) Print and log training statistics every this many learner iterations.
            log_freq=50,
            # (int >= 0) Write the latest checkpoint every this many learner iterations, and once after the first round that trains (a state a checkpoint cannot hold then shows at once); 0: only at the start, after that round and at the end.
            save_ckpt_freq=1000,
            # (float >= 0) Also write it when this many seconds passed since the last one (0: off): a killed run loses at most this much.
            save_ckpt_every_s=300.0,
            # (list) Extra learner hooks by registered name (HOOK_REGISTRY), or dict(type=name, **kwargs) with keyword arguments, run after the built-in ones in this order.
            hooks=[],
        ),
        # (int in [0, 256]) Torch intra-op threads for learning and collection; 0 picks a value for small networks.
        torch_threads=0,
        # (bool) Serial off-policy pipeline: learn in a second thread while the collector collects the next segment (its own CPU copy of the weights, refreshed after each round: one round of lag, deterministic); for policies whose update draws no random numbers (IMPALA); the parallel pipeline, whose learner is already apart, ignores it.
        learner_thread=False,
        # (str in {'error', 'skip_update'}) NaN/inf in a loss or gradient: 'error' stops the run naming the source; 'skip_update' drops that update with a warning.
        on_nonfinite='error',
        # (str in {'off', 'default', 'reduce-overhead', 'max-autotune-no-cudagraphs', 'max-autotune'}) torch.compile the learn step's forward and losses with this mode (docs/concepts.md, "Compiled update"); 'off' (eager) is faster on the CPU for acframe's models, compile time included (docs/benchmarks.md); 'reduce-overhead' and 'max-autotune' capture CUDA graphs (policy.cuda only).
        compile='off',
    ),
    collect=dict(
        # (int > 0) Train samples collected per collection across all collector envs, as in DI-engine (a multiple of env.collector_env_num): a sample is one transition, or one unroll of unroll_len steps for policies that train on unrolls; each env steps n_sample / collector_env_num * unroll_len times.
        n_sample=256,
        # (list) Collector event hooks (acframe.worker.CollectorHook: after_collect) by registered name (HOOK_REGISTRY), or dict(type=name, **kwargs); each sees every collection's env steps and finished episodes.
        hooks=[],
    ),
    eval=dict(
        # (bool) Evaluate with the most likely action (True) or with actions sampled from the policy (False); the summary records it.
        deterministic=True,
        evaluator=dict(
            # (int >= 0) Evaluate every this many learner iterations (0 evaluates only at the end of training).
            eval_freq=200,
            # (list) Evaluator event hooks (acframe.worker.EvaluatorHook: after_evaluate) by registered name (HOOK_REGISTRY), or dict(type=name, **kwargs); each sees every evaluation's result.
            hooks=[],
        ),
    ),
    other=dict(
        replay_buffer=dict(
            # (str) Registered replay buffer type.
            type='fifo',
            # (int in [1, 1_000_000_000]) Capacity of the replay buffer in samples; the oldest are dropped first.
            replay_buffer_size=1000,
            # (int > 0) A sample is dropped after being trained on this many times.
            max_use=16,
            # (bool) Save the replay buffer contents in checkpoints, so --resume restores it.
            save_in_checkpoint=False,
            # (bool) fifo, episodic and their prioritized variants store the stacked uint8 frames of image observations (obs of shape (frame_stack, ...)) once each, an observation as frame_stack indices (exact: frames are compared byte for byte; Atari: ~6x less memory, docs/pixels.md); False: every observation stored whole.
            dedup_frames=True,
        ),
    ),
)

PARALLEL = dict(
    # (int in [1, 4096] or None) Actors collecting at once (processes, or Ray actors), each stepping env.collector_env_num envs; None: one per CPU core this process may use (its affinity mask; Ray: as many as the cluster's CPUs hold); more local actor processes than those cores are warned of.
    actor_num=None,
    # (str in {'auto', 'sync', 'async'}) 'auto' (sync for on-policy policies, async otherwise), 'async' (actors collect while the learner trains) or 'sync' (every actor delivers one segment per weights version, then the learner updates).
    sync_mode='auto',
    # (int >= 0) Actors never act with weights more than this many learner updates older than the newest published weights.
    max_policy_lag=16,
    # (float >= 0 or None) Async: the learner takes in new segments only while it has received at most this many env steps per update (actors wait meanwhile); None: the serial loop's env steps per collection (n_sample times the sample's steps) / update_per_collect; 0: actors never wait.
    env_steps_per_update=None,
    # (int >= 0) A dead actor or evaluator is restarted with a warning; the run fails after this many restarts in total.
    max_restarts=10,
    # (str in {'auto', 'spawn', 'forkserver', 'fork'}) How the local backend starts its processes: 'auto' ('fork' on Linux when policy.cuda is off, the env manager is fork-safe (not envpool) and policy.learn.torch_threads <= 1: starts in a blink; else 'spawn'), 'spawn', 'forkserver' or 'fork'.
    start_method='auto',
    # (float > 0) Seconds the actors and the evaluator may take to start (build envs and policy) before the run fails.
    start_timeout=120.0,
    # (float > 0 or None) Local backend: an actor or the evaluator that is alive but not running (stopped with SIGSTOP, wedged) and gave no heartbeat for this many seconds is killed and restarted like a dead one (counted in parallel.max_restarts); a slow env or evaluation still beats; None: never checked.
    heartbeat_timeout_s=60.0,
    # (bool) Local backend: actors hand segments to the learner through shared memory (slots per actor; the pipe carries a small header) and, async, a learner thread copies them into the replay buffer during the update; False: pickled over the pipe, taken in by the learner's loop.
    shared_memory_segments=True,
    # (str in {'actor', 'server'}) Local backend: 'actor' (each actor runs its own collect-mode forward pass on the CPU) or 'server' (one inference-server process batches the waiting actors' observations from shared memory and runs the network once per batch, on the GPU with policy.cuda; a recurrent model's states and gSDE's matrices are kept per actor and env on the server; docs/parallel.md).
    inference='actor',
    # (float >= 0) CPUs the Ray backend reserves for each actor (Ray places actors on nodes by this).
    actor_num_cpus=1.0,
    # (float >= 0) CPUs the Ray backend reserves for the evaluator.
    evaluator_num_cpus=1.0,
    # (str in {'default', 'spread'}) How the Ray backend places its actors on the nodes: 'default' (Ray's hybrid policy: a node, the driver's first, is filled to half its CPUs before the next is used) or 'spread' (Ray's SPREAD strategy: the actors go to the nodes in turn, so a lost node takes few of them).
    ray_scheduling='default',
    # (int in [1, 256]) Data-parallel learners (DDP; docs/ddp.md): this many rank processes, each learning on its share of every batch, gradients all-reduced each step; serial pipelines: each rank collects with its share of the envs; -m parallel (local, inline or Ray backend): each rank is fed by its share of parallel.actor_num; the batch keys (env.collector_env_num and collect.n_sample in the serial pipelines, parallel.actor_num in -m parallel, learn.batch_size, replay sizes) stay global and are split evenly; 1: one learner.
    learner_num=1,
    # (float >= 0) --backend ray (-m parallel or a serial pipeline) with parallel.learner_num > 1: CPUs each learner rank 1..N-1 (a Ray actor; rank 0 is the driver process) reserves; with policy.cuda it reserves one GPU too.
    learner_num_cpus=1.0,
    # (str in {'auto', 'gloo', 'nccl'}) torch.distributed backend of the data-parallel learners: 'auto' (nccl with policy.cuda, one GPU per rank; else gloo), 'gloo' or 'nccl'.
    learner_backend='auto',
    # (float > 0) Seconds a data-parallel collective may wait for the other ranks (rank 0's evaluations included) before the run fails naming the rank; a rank that dies is named at once.
    collective_timeout_s=600.0,
    # (int in [1, 256]) Asynchronous training (-m async, A3C; docs/ddp.md): worker processes, each collecting with its own env.collector_env_num envs and applying its own gradients to one shared-memory model and optimizer state without locks; at most one per CPU core.
    async_worker_num=2,
)

LOGGER = dict(
    # (list) Backends every scalar of the run goes to, by registered name: 'tensorboard' (log/ event files, read by -m plot), 'jsonl' (log/scalars.jsonl), 'wandb' (extra 'wandb'), 'mlflow' (extra 'mlflow'), or a user's own (@LOGGER_REGISTRY.register, module in import_names).
    backends=['tensorboard'],
    # (float > 0) Seconds the run waits for its threaded backends (W&B, MLflow, a user's: LoggerBackend.threaded) to open (all together; W&B's own start allows 90 s), for one to take a call while 10,000 wait, or for them to finish at the end; a call still running after this long drops the backend at the run's next scalar. Past it: one warning line, and the run goes on without the backend.
    timeout_s=120.0,
    jsonl=dict(
        # (float >= 0) Flush log/scalars.jsonl to disk at most this many seconds after a write (0: after every scalar); it is always flushed at the end.
        flush_every_s=2.0,
    ),
    wandb=dict(
        # (str) W&B project the run is logged to.
        project='acframe',
        # (str or None) W&B entity (user or team); None: the account's default.
        entity=None,
        # (str or None) W&B run name; None: the run folder's name.
        name=None,
        # (str or None) W&B group of the run; None: no group.
        group=None,
        # (list) W&B tags of the run.
        tags=[],
        # (str in {'online', 'offline', 'disabled'} or None) W&B mode; None: the WANDB_MODE environment variable, else 'online'. The API key comes from wandb login or WANDB_API_KEY, never from the config.
        mode=None,
        # (str or None) Folder W&B keeps its local files in (its wandb/ subfolder); None: WANDB_DIR, else the current folder. Not inside the run folder (W&B writes symbolic links).
        dir=None,
    ),
    mlflow=dict(
        # (str or None) MLflow tracking URI: sqlite:////abs/file.db, http(s)://host, file:///abs/folder or a folder path (file stores need MLFLOW_ALLOW_FILE_STORE=true on MLflow 3); None: MLFLOW_TRACKING_URI, else MLflow's default. Credentials go in MLFLOW_TRACKING_USERNAME/PASSWORD/TOKEN, never in the URI.
        tracking_uri=None,
        # (str or None) MLflow experiment the run is logged under (created when missing); None: the config's exp_name.
        experiment_name=None,
        # (str or None) MLflow run name; None: the run folder's name.
        run_name=None,
    ),
    # (dict) Options of user backends by registered name (free-form: backend 'mine' reads run.cfg.logger.options.get('mine', {})).
    options=dict(),
)

CREATE = dict(
    env=dict(
        # (str) Registered env factory; 'gym' makes env.env_id with gymnasium.
        type='gym',
    ),
    env_manager=dict(
        # (str) 'sync' steps the envs in this process, 'async' in subprocesses, 'envpool' in EnvPool's C++ threads (extra 'envpool'); or a registered env manager's name.
        type='sync',
    ),
    policy=dict(
        # (str) Registered policy name.
        type='',
    ),
)
