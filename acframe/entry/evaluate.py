"""Evaluate a finished run: ``acframe -m eval --load RUN_DIR_OR_CKPT [--episodes N] [--video DIR] [-s SEED]``.

The run's eval mode (deterministic actions, unless the config evaluates by sampling) plays ``--episodes``
episodes (default ``env.n_evaluator_episode``) on ``env.evaluator_env_num`` envs seeded as the run's own
evaluations (``seed + EVAL_SEED_OFFSET + i``), so evaluating a run's best checkpoint with its seed reproduces
the return that made it the best. The per-episode returns and lengths go to a JSON file (default
``RUN_DIR/eval/<checkpoint>_seed<seed>.json``; an evaluation with other settings than the run's own -- another
number of episodes, or a config (``-c``), overrides (``policy.eval.deterministic=False``) or ``--domain-params`` that
change what the run's config says -- writes ``<checkpoint>_seed<seed>_<N>ep.json`` or
``<checkpoint>_seed<seed>[_<N>ep]_<tag>.json``, ``tag`` a digest of the differing values, so it never replaces the
run's own result; the JSON records them; a checkpoint outside a run folder, evaluated with ``-c``, always gets a
tag). ``--video DIR`` records every counted episode (``EpisodeRecorder``) as
``DIR/<run>_<checkpoint>_seed<seed>[<tag>]_env<i>-episode-<k>.mp4``, the run folder's name and the result file's
tag (the ``video`` extra: imageio-ffmpeg), moved into ``DIR`` once the evaluation is whole (``VideoStaging``);
for a run folder whose ``logger.backends`` name a tracker that stores media (W&B, MLflow), the videos are also
uploaded to the run's tracker run (``loggers.upload_videos``; ``video_uploads`` in the result names where they went).
A domain-randomized run evaluates with the nominal parameters or, with ``--domain-params drawn``, each
evaluator env with its own drawn parameters (default: as the run evaluated, ``apply_to_evaluator``).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import time
import warnings
from functools import partial
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from ..config.compile import TRAINING_ONLY_SECTIONS, in_sections
from ..envs import EnvManager, in_process_manager, make_env_manager
from ..envs.randomization import DomainRandomizer
from ..envs.gym_env import env_name, recorded_env_id, refuses_render_mode
from ..errors import ConfigError, ConfigWarning, VideoError
from ..utils import atomic_write_json, set_global_seed
from ..worker import Evaluator

EVAL_SEED_OFFSET = 100_000
#: ``--domain-params`` choices
DOMAIN_PARAMS = ('nominal', 'drawn')


#: the name of an evaluation's hidden staging folder inside ``--video DIR`` (``VideoStaging``) begins so
STAGING_PREFIX = '.acframe-recording-'
#: seconds ffmpeg may take to finish a video once its last frame is sent (nothing waits forever)
VIDEO_CLOSE_TIMEOUT_S = 60.0


class EpisodeRecorder(gym.Wrapper):
    """Records the env's first ``episodes`` episodes (counted from 0 at each ``reset``) as
    ``<folder>/<name_prefix>-episode-<k>.mp4`` (gymnasium's ``RecordVideo``'s names), each frame handed to an ffmpeg
    encoder as it is rendered (imageio-ffmpeg, at the env's ``render_fps``). ``RecordVideo`` keeps an episode's
    frames in memory and encodes them when it ends: ten CartPole envs held 2.4-3.8 GB, and an interrupted evaluation
    encoded every env's partial episode before it could stop (seconds to minutes). ``abandon()``: stop without
    finishing the files (their partial recordings are taken back by ``VideoStaging``)."""

    def __init__(self, env: gym.Env, folder: str, name_prefix: str, episodes: int) -> None:
        super().__init__(env)
        self.folder, self.name_prefix, self.episodes = folder, name_prefix, int(episodes)
        fps = env.metadata.get('render_fps')
        self.fps = float(fps) if isinstance(fps, (int, float)) and not isinstance(fps, bool) and fps > 0 else 30.0
        self.episode_id = -1
        self._writer: Any = None
        self._path = ''

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        self._finish()
        self.episode_id += 1
        if self.episode_id < self.episodes:
            self._frame(start=True)
        return obs, info

    def step(self, action: Any) -> Any:
        result = self.env.step(action)
        if self._writer is not None:
            self._frame()
        return result

    def _frame(self, start: bool = False) -> None:
        import imageio_ffmpeg

        rendered = self.env.render()
        if isinstance(rendered, list):  # (a render mode that collects frames: the latest)
            rendered = rendered[-1] if rendered else None
        frame = rgb_frame(rendered)
        if frame is None:  # (RecordVideo warned and recorded nothing: said once, the env's later episodes not tried)
            self.abandon()
            self.episodes = 0
            what = (f"a {rendered.dtype} array of shape {rendered.shape}" if isinstance(rendered, np.ndarray)
                    else type(rendered).__name__)
            warnings.warn(f"--video: {self.name_prefix}'s render() gave {what}, not a frame (H, W, 3), (H, W, 4), "
                          f"(H, W, 1) or (H, W); its episodes are not recorded", ConfigWarning, stacklevel=2)
            return
        if start:
            self._path = os.path.join(self.folder, f"{self.name_prefix}-episode-{self.episode_id}.mp4")
            self._writer = imageio_ffmpeg.write_frames(self._path, (frame.shape[1], frame.shape[0]), fps=self.fps,
                                                       codec='libx264', macro_block_size=1, ffmpeg_log_level='quiet',
                                                       ffmpeg_timeout=VIDEO_CLOSE_TIMEOUT_S)
            self._writer.send(None)  # (starts ffmpeg)
        if self._writer is not None:
            try:
                self._writer.send(frame)
            except (OSError, RuntimeError, StopIteration) as exc:  # (ffmpeg gone: a full disk, or it failed)
                self.abandon()
                raise self._failure(exc) from None

    def _failure(self, exc: Optional[BaseException]) -> VideoError:
        why = ("no space left on the device; free disk space or record to another folder" if self._room_short() else
               f"ffmpeg stopped ({str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__})")
        folder = self.folder  # (as the user named it: the evaluation's staging folder is inside it)
        if os.path.basename(os.path.normpath(folder)).startswith(STAGING_PREFIX):
            folder = os.path.dirname(os.path.normpath(folder))
        return VideoError(f"--video: the video {os.path.join(folder, os.path.basename(self._path))} could not be "
                          f"written: {why}")

    def _room_short(self) -> bool:
        import shutil

        try:
            return shutil.disk_usage(self.folder).free < 2 ** 20
        except OSError:
            return False

    def _finish(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()  # (ffmpeg writes the file's end and exits; its exit status is not told)
            except (OSError, RuntimeError) as exc:
                raise self._failure(exc) from None
            if self._room_short():  # (a full disk at the file's end: ffmpeg exits, the file cut, without a word)
                import imageio_ffmpeg

                try:
                    imageio_ffmpeg.count_frames_and_secs(self._path)
                except (OSError, RuntimeError) as exc:
                    raise self._failure(exc) from None

    def abandon(self) -> None:
        """Stop recording without finishing the current file (an interrupted or failed evaluation's): ffmpeg, in a
        process group of its own, is killed rather than waited for."""
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.throw(KeyboardInterrupt)  # (imageio-ffmpeg kills its ffmpeg on an interrupt)
            except (KeyboardInterrupt, StopIteration, OSError, RuntimeError):
                pass

    def close(self) -> None:
        try:
            self._finish()
        finally:
            super().close()


def rgb_frame(frame: Any) -> Optional[np.ndarray]:
    """``frame`` (what ``render()`` gave) as an (H, W, 3) uint8 array of even sizes (yuv420p: an odd row or column is
    repeated, not rescaled), or None when it is no image: grey (H, W) or (H, W, 1) repeated over three channels, RGBA
    without its alpha, floats in [0, 1] scaled to 0-255, other numbers clipped to it."""
    if not isinstance(frame, np.ndarray) or frame.ndim not in (2, 3) or frame.size == 0:
        return None
    if frame.ndim == 2:
        frame = frame[..., None]
    channels = frame.shape[-1]
    if channels == 1:
        frame = np.repeat(frame, 3, axis=-1)
    elif channels == 4:
        frame = frame[..., :3]
    elif channels != 3:
        return None
    if frame.dtype == np.bool_:
        frame = frame.astype(np.uint8) * 255
    elif frame.dtype.kind == 'f':
        finite = np.nan_to_num(frame.astype(np.float64), nan=0.0, posinf=255.0, neginf=0.0)
        frame = np.clip(finite * (255.0 if finite.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
    elif frame.dtype != np.uint8:
        frame = np.clip(frame, 0, 255).astype(np.uint8)
    height, width = frame.shape[:2]
    if height % 2 or width % 2:
        frame = np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)), mode='edge')
    return np.ascontiguousarray(frame)


def record_video(folder: str, prefix: str, quota: Sequence[int], recorders: List[EpisodeRecorder], env: gym.Env,
                 index: int) -> gym.Env:
    """Evaluator env ``index`` wrapped in an ``EpisodeRecorder`` (appended to ``recorders``), recording its first
    ``quota[index]`` episodes as ``<folder>/<prefix>env<index>-episode-<k>.mp4`` (the env factory's ``wrap``)."""
    if env.render_mode != 'rgb_array':
        env.close()
        raise ConfigError(f"--video: the env renders with render_mode={env.render_mode!r}, not 'rgb_array'; "
                          f"its factory must pass env.env_kwargs.render_mode on to the env")
    recorder = EpisodeRecorder(env, folder, f"{prefix}env{index}", quota[index])
    recorders.append(recorder)
    return recorder


def episode_quota(n_episode: int, num_envs: int) -> List[int]:
    """Episodes each env contributes to an evaluation (the ``Evaluator``'s even split)."""
    return [n_episode // num_envs + (i < n_episode % num_envs) for i in range(num_envs)]


def evaluator_env(cfg: Any, seed: int, domain_params: str, video_dir: Optional[str], n_episode: int,
                  video_prefix: str = '', recorders: Optional[List[EpisodeRecorder]] = None
                  ) -> Tuple[EnvManager, Optional[List[Dict[str, Any]]]]:
    """The evaluation envs (nominal or drawn parameters, optionally recording) and the drawn parameters, built by
    the env factory as the run's evaluator built them.

    Recorded files are ``<video_dir>/<video_prefix>env<i>-episode-<k>.mp4``: episode ``k`` of evaluator env ``i``,
    recorded in this process by the manager the run's ``env.manager`` names for it (``in_process_manager``: EnvPool's
    envs render no frames, but gymnasium's Atari chain gives EnvPool's frames, ``acframe.envs.atari``); each env's
    ``EpisodeRecorder`` is appended to ``recorders``.
    """
    num_envs = int(cfg.env.evaluator_env_num)
    seeds = [int(seed) + i for i in range(num_envs)]
    drawn = DomainRandomizer(cfg).evaluator_params(num_envs) if domain_params == 'drawn' else None
    if video_dir is None:
        return make_env_manager(cfg, 'evaluator', seeds, params=drawn), drawn
    manager = in_process_manager(cfg.env.manager)
    if manager is None:  # (a vectorized env)
        raise ConfigError(f"--video: env.manager '{cfg.env.manager}' steps envs that cannot be recorded one by one; "
                          f"leave --video out")
    # pygame-rendered envs draw rgb_array frames off-screen: no display or sound device is needed (or probed)
    os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
    os.environ.setdefault('SDL_AUDIODRIVER', 'dummy')
    os.environ.setdefault('SDL_NO_SIGNAL_HANDLERS', '1')  # (SDL's would take Ctrl-C and SIGTERM: a script's too)
    video_cfg = copy.deepcopy(cfg)
    video_cfg.env.env_kwargs = dict(cfg.env.get('env_kwargs') or {}, render_mode='rgb_array')
    record = partial(record_video, video_dir, video_prefix, episode_quota(n_episode, num_envs),
                     recorders if recorders is not None else [])
    try:
        return make_env_manager(video_cfg, 'evaluator', seeds, manager=manager, params=drawn, wrap=record), drawn
    except ConfigError as exc:
        if refuses_render_mode(exc, cfg) and not str(exc).startswith('--video'):
            raise ConfigError(f"--video: env '{env_name(cfg.env)}' takes no render_mode, so it draws no frames to "
                              f"record; leave --video out (or give the env render_mode='rgb_array', "
                              f"docs/custom_env.md)") from exc
        raise


def resolve_domain_params(cfg: Any, domain_params: Optional[str]) -> Optional[str]:
    """'nominal' / 'drawn' for a domain-randomized run (default: as it evaluated), None for any other run."""
    dr = cfg.env.get('domain_randomization') or {}
    if not dr.get('enable'):
        if domain_params == 'drawn':
            raise ConfigError("--domain-params drawn: this run has no env.domain_randomization to draw from; "
                              "leave the flag out")
        return None
    if domain_params is None:
        return 'drawn' if dr.get('apply_to_evaluator') else 'nominal'
    if domain_params not in DOMAIN_PARAMS:
        raise ConfigError(f"--domain-params {domain_params!r} is not one of {', '.join(DOMAIN_PARAMS)}")
    return domain_params


def settings_tag(settings: Dict[str, Any]) -> str:
    """``''`` for an evaluation with the run's own settings; ``'_<N>ep'`` when it plays another number of episodes;
    then ``'_'`` and 8 hex digits of the digest of every other setting that differs."""
    rest = {k: v for k, v in settings.items() if k != 'episodes'}
    tag = f"_{settings['episodes']}ep" if 'episodes' in settings else ''
    if rest:
        text = json.dumps(rest, sort_keys=True, default=str)
        tag += '_' + hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]
    return tag


def default_result_path(run_dir: Optional[str], checkpoint: str, seed: int,
                        settings: Optional[Dict[str, Any]] = None) -> str:
    """``<run>/eval/<checkpoint>_seed<seed>.json``; with ``settings`` (what differs from the run's own evaluation,
    ``evaluation_settings``) ``..._seed<seed><settings_tag>.json``, one file per distinct setting."""
    stem = os.path.splitext(os.path.basename(checkpoint))[0]
    folder = run_dir if run_dir is not None else os.path.dirname(os.path.abspath(checkpoint))
    return os.path.join(folder, 'eval', f"{stem}_seed{seed}{settings_tag(settings or {})}.json")


def _dotted(tree: Any, key: str) -> Any:
    """The value at ``key`` of a compiled config, ``'<absent>'`` (as ``config_differences`` says) where absent."""
    from ..config.ding_compat import MISSING, get_path

    value = get_path(tree, key)
    return '<absent>' if value is MISSING else value


#: keys that do not change what an evaluation plays: budgets and names (``RESUME_FREE_KEYS``), the seed (in the
#: file name) and the episodes (``'episodes'``)
NOT_A_SETTING = ('seed', 'env.n_evaluator_episode')
#: sections that do not change what an evaluation plays either: those only training reads, and where videos go
NOT_PLAYED_SECTIONS = TRAINING_ONLY_SECTIONS + ('logger',)


def evaluation_settings(cfg: Any, own: Any, n_episode: int, domain_params: Optional[str],
                        default_domain_params: Optional[str], named_config: bool = False) -> Dict[str, Any]:
    """What makes this evaluation differ from the run's own, by value, not by how it was asked for (a config file
    edited between two evaluations differs; an override that sets a key to its value does not).

    ``own`` is the run's compiled config, or, with ``named_config`` (a checkpoint outside a run folder, or a run
    folder whose config this acframe cannot compile), the config given with ``-c`` compiled without overrides,
    which then names the result as a whole (``'config'``). ``'differences'``: ``{dotted key: value}`` of ``cfg``
    against ``own``; ``'episodes'`` when it plays other than ``own``'s ``env.n_evaluator_episode``;
    ``'domain_params'`` other than the run's. Budgets, names, the seed and the episode count are never part of
    ``'differences'`` or ``'config'``, nor are the sections that do not change what is played (``parallel``, the
    replay buffer's, ``logger``: ``NOT_PLAYED_SECTIONS``). Empty when there is none."""
    from ..config.ding_compat import pop_path
    from ..config.run_folder import RESUME_FREE_KEYS, given_config_differences

    settings: Dict[str, Any] = {}
    if named_config:
        whole = json.loads(json.dumps(own, default=str))
        for key in RESUME_FREE_KEYS + NOT_A_SETTING + NOT_PLAYED_SECTIONS:
            pop_path(whole, key)
        settings['config'] = whole
    keys = [key for key in given_config_differences(own, cfg)
            if key not in NOT_A_SETTING and not in_sections(key, NOT_PLAYED_SECTIONS)]
    if keys:
        settings['differences'] = {key: _dotted(cfg, key) for key in keys}
    if n_episode != int(own.env.n_evaluator_episode):
        settings['episodes'] = n_episode
    if domain_params != default_domain_params:
        settings['domain_params'] = domain_params
    return json.loads(json.dumps(settings, default=str))  # (as the result file will hold them)


def _warn_mask_dropped(cfg: Any, own: Any) -> None:
    """Warn when the run's own env gives an action mask and the env this evaluation overrides it with gives none:
    the policy then acts without the mask it was trained under (illegal actions included)."""
    from ..envs.masks import mask_space_of
    from ..inference import env_spaces

    try:
        trained, now = env_spaces(own)[0], env_spaces(cfg)[0]
    except Exception:  # noqa: BLE001 - the run's own env cannot be built here (its module, a licence): no comparison
        return
    if mask_space_of(trained) is not None and mask_space_of(now) is None:
        warnings.warn(f"the run trained with action masks (env '{env_name(own.env)}' gives 'action_mask'); env "
                      f"'{env_name(cfg.env)}' gives none, so this evaluation acts without them", ConfigWarning,
                      stacklevel=3)


def evaluate_run(target: str, config: Optional[Any] = None, overrides: Sequence[Any] = (), seed: Optional[int] = None,
                 episodes: Optional[int] = None, video_dir: Optional[str] = None, domain_params: Optional[str] = None,
                 out: Optional[str] = None, imports: Sequence[str] = (), progress: bool = False) -> Dict[str, Any]:
    """Evaluate a run folder or checkpoint; write and return the result (see the module docstring).
    ``imports``: modules named for the run folder's ``import_names`` (``--import``); ``progress``: a line every
    few seconds with the episodes done and the time left at that pace (``-m eval`` without ``-q``).

    The result holds ``mean``, ``std``, ``min``, ``max``, ``episodes``, ``returns``, ``lengths``, the
    checkpoint and its ``train_iter`` / ``env_step``, the ``seed``, ``deterministic`` (greedy or sampled actions),
    ``settings`` (what differs from the run's own evaluation, ``evaluation_settings``), ``domain_params`` (and
    ``drawn_params``), ``video_dir`` and ``result_file`` (where it was written).
    """
    from ..inference import build_inference_policy
    from ..runs import locate_run
    from ..worker import load_checkpoint

    if episodes is not None and episodes <= 0:
        raise ConfigError(f"--episodes {episodes}: evaluate at least 1 episode")
    if episodes is not None:
        from ..config.compile import override_list, override_value

        also = override_value(override_list(overrides), 'env.n_evaluator_episode')
        if also is not None and also != episodes:  # (--episodes won without a word)
            raise ConfigError(f"--episodes {episodes} and env.n_evaluator_episode={also} give two numbers of episodes; "
                              f"give one of them")
    check_output_paths(out, video_dir)
    artifacts = locate_run(target, config, overrides, seed, imports=imports, reads_logger=True)  # (video uploads)
    cfg = artifacts.cfg
    domain_params = resolve_domain_params(cfg, domain_params)
    n_episode = int(episodes or cfg.env.n_evaluator_episode)
    own = None
    if artifacts.run_dir is not None:  # the run's own config, to name what differs from it
        from ..config.run_folder import load_run_config

        try:
            own = cfg if config is None and not overrides else load_run_config(artifacts.run_dir, seed=cfg.seed,
                                                                                imports=imports, builds_buffer=False)
        except ConfigError:  # a run folder this acframe cannot compile alone: with -c, named by that config
            own = None if config is not None else cfg
    named_config = own is None
    if named_config:  # the config given, without the overrides, names the result
        from ..config import compile_config

        with warnings.catch_warnings():  # (said once already, when the evaluation's config was compiled)
            warnings.simplefilter('ignore', ConfigWarning)
            own = compile_config(config, [], seed=cfg.seed)
    settings = evaluation_settings(cfg, own, n_episode, domain_params, resolve_domain_params(own, None), named_config)
    if not named_config and any(key.startswith('env.') for key in settings.get('differences', {})):
        _warn_mask_dropped(cfg, own)
    if video_dir is not None:
        _note_recording_manager(cfg, settings)
    path = out or default_result_path(artifacts.run_dir, artifacts.checkpoint, int(cfg.seed), settings)
    if out is None:  # (a read-only run folder: said before any episode plays, not after the last)
        check_result_file(path, f"the result's file {path} (--out FILE writes it elsewhere)")
    state = load_checkpoint(artifacts.checkpoint)  # a clear error before any env starts
    set_global_seed(cfg.seed)
    stem = os.path.splitext(os.path.basename(artifacts.checkpoint))[0]
    run_name = f"{os.path.basename(os.path.abspath(artifacts.run_dir))}_" if artifacts.run_dir else ''
    prefix = f"{run_name}{stem}_seed{cfg.seed}{settings_tag(settings)}_"  # of the videos
    staging = VideoStaging(video_dir) if video_dir is not None else None
    recorders: List[EpisodeRecorder] = []
    try:
        env, drawn = evaluator_env(cfg, cfg.seed + EVAL_SEED_OFFSET, domain_params or 'nominal',
                                   staging.folder if staging is not None else None, n_episode, prefix, recorders)
        try:
            # the eval mode as the run evaluated (greedy, or sampling where policy.eval.deterministic=False)
            policy = build_inference_policy(artifacts, env.observation_space, env.action_space, state=state,
                                            force_deterministic=False)
            evaluator = Evaluator(env, policy.eval_mode, n_episode, cfg.env.stop_value, 0)
            if progress:
                evaluator.progress = EpisodeProgress()
            result = evaluator.evaluate()
        except BaseException:  # interrupted or failed: its partial recordings are not finished (staging drops them)
            for recorder in recorders:
                recorder.abandon()
            raise
        finally:
            env.close()  # also finishes the last recording
        videos = staging.keep() if staging is not None else []  # the whole evaluation's, in place at once
    finally:
        if staging is not None:
            staging.discard()  # an interrupted or failed one's partial recordings (the folder's videos stay)
    returns = [float(r) for r in result['returns']]
    report = {
        'mean': result['mean'], 'std': result['std'], 'min': min(returns), 'max': max(returns),
        'episodes': len(returns), 'returns': returns, 'lengths': [int(n) for n in result['lengths']],
        'env_id': recorded_env_id(cfg.env), 'policy': cfg.policy.type, 'seed': int(cfg.seed),
        'deterministic': bool(cfg.policy.eval.get('deterministic', True)), 'settings': settings,
        'run_dir': os.path.abspath(artifacts.run_dir) if artifacts.run_dir else None,
        'checkpoint': os.path.abspath(artifacts.checkpoint),
        'train_iter': state.get('train_iter'), 'env_step': state.get('env_step'),
        'domain_params': domain_params, 'drawn_params': drawn,
        'video_dir': os.path.abspath(video_dir) if video_dir is not None else None,
        'videos': len(videos) if video_dir is not None else None,
    }
    report['video_uploads'] = []
    if videos and artifacts.run_dir is not None:  # to W&B / MLflow
        from ..loggers import upload_videos

        report['video_uploads'] = upload_videos(cfg, artifacts.run_dir, videos, int(state.get('env_step') or 0))
    report['result_file'] = os.path.abspath(path)
    atomic_write_json(path, report)
    return report


def is_eval_result(path: str) -> bool:
    """Whether ``path`` holds an evaluation's result (``evaluate_run``'s JSON: a dict with its return statistics and
    checkpoint), which ``--out`` may replace; anything else there (a checkpoint, a run's config.json, a script) is
    the user's, and is not."""
    if not os.path.isfile(path) or os.path.getsize(path) > 64 * 2 ** 20:
        return False
    try:
        with open(path, encoding='utf-8') as f:
            report = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(report, dict) and {'mean', 'returns', 'episodes', 'checkpoint'} <= set(report)


def check_result_file(path: str, said: str) -> None:
    """A ``ConfigError`` naming ``said`` unless ``path`` is a file the result can be written to (``check_output_file``)
    that is new or an earlier result (``is_eval_result``)."""
    from ..utils import check_output_file

    check_output_file(path, said, 'result.json')
    if os.path.lexists(path) and not is_eval_result(path):
        raise ConfigError(f"{said}: an existing file that is not an evaluation's result (-m eval's JSON); name a new "
                          f"file (a result there is replaced)")


def check_output_paths(out: Optional[str], video_dir: Optional[str]) -> None:
    """``--out`` names a file that can be written (new, or an earlier result: never a file of another kind) and
    ``--video`` a folder (or a path for one): said before anything is evaluated, so an evaluation is never lost to
    its output's path and never replaces what is not a result; the video encoder (imageio-ffmpeg) is there."""
    from ..loggers.base import can_write

    if out is not None:
        check_result_file(out, f"--out {out}")
    if video_dir is not None:
        if os.path.lexists(video_dir) and not os.path.isdir(video_dir):
            raise ConfigError(f"--video {video_dir}: not a folder; name a folder for the videos (made if missing)")
        if not os.path.lexists(video_dir) and os.path.splitext(video_dir)[1].lower() in ('.mp4', '.gif', '.avi', '.mov'):
            raise ConfigError(f"--video {video_dir}: names the folder the videos go to (one file per episode), not a "
                              f"file; e.g. --video {os.path.splitext(video_dir)[0] or 'videos'}")
        if not can_write(video_dir, folder=True):
            raise ConfigError(f"--video {video_dir}: cannot be written here; name a folder you can write")
        import importlib.util

        if importlib.util.find_spec('imageio_ffmpeg') is None:
            raise ConfigError("--video needs imageio-ffmpeg to encode MP4: pip install 'acframe[video]'")


class VideoStaging:
    """``--video DIR``'s recordings go to a hidden folder inside ``DIR`` first; ``keep()`` moves them into ``DIR``
    once the evaluation is whole (a video of the same name there is replaced by one of the same episode, the
    same settings); ``discard()`` removes what is left (an interrupted evaluation's partial recordings), and ``DIR``
    itself when this evaluation made it and it stayed empty."""

    def __init__(self, folder: str) -> None:
        import tempfile

        from ..utils import missing_folders

        self.target = os.path.abspath(folder)
        self.made = missing_folders(self.target)
        os.makedirs(self.target, exist_ok=True)
        self.folder = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.target)

    def keep(self) -> List[str]:
        """Move the recorded videos into the folder; their paths there."""
        kept = []
        for name in sorted(os.listdir(self.folder)):
            if name.endswith('.mp4'):
                os.replace(os.path.join(self.folder, name), os.path.join(self.target, name))
                kept.append(os.path.join(self.target, name))
        return kept

    def discard(self) -> None:
        import shutil

        from ..utils import remove_empty_folders

        shutil.rmtree(self.folder, ignore_errors=True)
        remove_empty_folders(self.made)


def _note_recording_manager(cfg: Any, settings: Dict[str, Any]) -> None:
    """``--video`` plays the episodes with the in-process manager that builds ``env.manager``'s envs one by one; where
    that one plays other episodes (EnvPool's envs, recorded through gymnasium's Atari chain), the evaluation is
    another setting (its result file is named so, as for ``env.manager=sync`` given)."""
    from ..envs import manager_class

    cls = manager_class(cfg.env.manager)
    if getattr(cls, 'in_process_plays_alike', True):
        return
    settings.setdefault('differences', {})['env.manager'] = in_process_manager(cfg.env.manager)


class EpisodeProgress:
    """``[eval] 120/1000 episodes in 30 s, about 3.7 min left`` on stdout, at most every ``interval_s`` seconds."""

    def __init__(self, interval_s: float = 5.0) -> None:
        self.start = time.monotonic()
        self.interval_s = interval_s
        self._last = self.start

    def __call__(self, done: int, wanted: int) -> None:
        now = time.monotonic()
        if now - self._last < self.interval_s or done >= wanted:
            return
        self._last = now
        elapsed = now - self.start
        left = elapsed / max(done, 1) * (wanted - done)
        try:
            print(f"[eval] {done}/{wanted} episodes in {_duration(elapsed)}, about {_duration(left)} left", flush=True)
        except (OSError, ValueError):  # the console is gone
            pass


def _duration(seconds: float) -> str:
    for unit, size in (('days', 86400), ('h', 3600), ('min', 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def result_line(report: Dict[str, Any]) -> str:
    """The one-line summary ``acframe -m eval`` prints."""
    # (a checkpoint a script saved through its own Learner records no env step)
    where = ', '.join(f"{name} {report[key]}" for name, key in (('iter', 'train_iter'), ('env step', 'env_step'))
                      if report.get(key) is not None)
    extras = [f"seed {report['seed']}"]
    if report['domain_params']:
        extras.append(f"{report['domain_params']} env parameters")
    if report['video_dir']:
        count = report.get('videos')
        extras.append(f"videos in {report['video_dir']}" if count is None or count else
                      f"no video in {report['video_dir']} (the env gave no frames)")
    if report.get('video_uploads'):
        extras.append(f"videos uploaded to {', '.join(report['video_uploads'])}")
    return (f"[eval] return {report['mean']:.2f} ± {report['std']:.2f} (min {report['min']:.2f}, max {report['max']:.2f}) "
            f"over {report['episodes']} episode{'s' if report['episodes'] != 1 else ''} of {os.path.basename(report['checkpoint'])}"
            f"{f' ({where})' if where else ''}, {', '.join(extras)} -> {report['result_file']}")
