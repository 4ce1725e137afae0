"""Learning curves of runs: ``acframe -m plot RUN_DIR [RUN_DIR ...] [--out FILE.png|.svg|.pdf] [--x env_steps|wall_s]``.

Four panels from the runs' tensorboardX logs (read by ``acframe.logs``; tensorboard is not needed):

* evaluation return — per config, the mean over its runs (interpolated on a common x grid, up to the longest
  run, a run that ended sooner holding its last evaluation) with a ± std band, and each run's own points faintly;
* training episode return — each run's logged mean return of the collector's finished episodes;
* loss — each run's ``learner/total_loss``;
* entropy — each run's ``learner/entropy`` (the policy's entropy).

Runs of the same config share one colour: their compiled configs are equal but for the keys that cannot change
what is learned (``GROUPING_IGNORES``: the seed, the experiment name, the budgets, ``logger.*`` and the checkpoint
frequencies), so the seeds of a config stay one group when one of them was resumed with a bigger budget or logged
to another backend. The legend names a config by its ``exp_name``. The x axis is env steps (learner values, logged
by train iteration, are placed on env steps through the evaluations, which log both) or training seconds since the
run's first logged value: wall-clock time with the pauses between a run's sittings (an interrupt and its
``--resume``) taken out (``training_seconds``). Every finished run also writes ``curves.svg`` into its folder
(``write_run_curves``; the same panels, drawn without matplotlib in milliseconds); the file name's extension picks
what ``--out`` draws: ``.svg`` that form, ``.png`` or ``.pdf`` matplotlib's (``plot_format``).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .errors import ConfigError
from .logs import Scalar, event_files, latest_timeline, read_event_file, read_scalars, scalars_by_tag

X_AXES = ('env_steps', 'wall_s')
#: figure size in inches and resolution: a 1200 x 900 pixel PNG
FIGSIZE = (12.0, 9.0)
DPI = 100
CURVES_PNG = 'curves.png'
#: what every finished run writes into its folder (``write_run_curves``): the same panels as an SVG, drawn in
#: milliseconds without matplotlib
CURVES_SVG = 'curves.svg'
EVAL_TAG = 'evaluator/return_mean'
TRAIN_RETURN_TAGS = ('collector/episode_return_mean', 'collector/episode_return')
LOSS_TAG = 'learner/total_loss'
ENTROPY_TAG = 'learner/entropy'
#: tags whose step is an env step: the anchors that place learner values (logged by train iteration) on env steps
ENV_STEP_PREFIXES = ('collector/', 'evaluator/return_mean', 'parallel/')
#: what ``--out`` may end in, and the format each extension draws (the file name decides; nothing else is guessed)
OUT_FORMATS = {'.png': 'png', '.svg': 'svg', '.pdf': 'pdf'}
#: compiled-config keys (dotted; a key names its whole subtree) that do not group runs: they cannot change what a run
#: learns — its seed and name, its budgets (a run resumed with more steps is the same config), where and how often it
#: logs, how often it writes its checkpoint, and the pipeline its file is written for (a run of an older file, which
#: had no such key, run with the same -m, is the same config)
GROUPING_IGNORES = ('seed', 'exp_name', 'max_env_step', 'max_train_iter', 'logger', 'pipeline',
                    'policy.learn.learner.save_ckpt_freq', 'policy.learn.learner.save_ckpt_every_s')


class Curve(NamedTuple):
    x: np.ndarray
    y: np.ndarray


class RunCurves(NamedTuple):
    """One run's curves on both x axes: ``curves[tag][x_axis]``."""

    run_dir: str
    config_key: str
    label: str
    curves: Dict[str, Dict[str, Curve]]


#: the longest legend label drawn (an exp_name is a folder name, at most 235 bytes)
LABEL_MAX = 60


def _config_identity(run_dir: str) -> Tuple[str, str]:
    """(a key equal for runs of the same config, a label) from the run's compiled config, as stored: plotting
    compiles nothing and imports nothing. The key is the config without ``GROUPING_IGNORES``: two runs that differ
    only in those (their seeds, budgets, loggers, checkpoint frequencies) have the same key."""
    from .config.run_folder import read_run_record

    cfg = json.loads(json.dumps(read_run_record(run_dir)['config'], default=str))  # a copy to prune
    label = str(cfg.get('exp_name') or os.path.basename(os.path.abspath(run_dir)))[:LABEL_MAX]
    for dotted in GROUPING_IGNORES:
        *parents, leaf = dotted.split('.')
        node = cfg
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return json.dumps(cfg, sort_keys=True, default=str), label


def load_run_curves(run_dir: str) -> RunCurves:
    """The eval-return, training-return, loss and entropy curves of one run folder."""
    from .entry.run_folder import check_folder_is_data

    check_run_dirs([run_dir])  # (a folder that is no run is said so before its contents are judged)
    check_folder_is_data(run_dir)
    key, label = _config_identity(run_dir)
    scalars, pauses = _read_sittings(os.path.join(run_dir, 'log'))
    tags = scalars_by_tag(scalars)
    if not tags:
        from .config.run_folder import read_run_record

        logger = read_run_record(run_dir)['config'].get('logger')
        backends = logger.get('backends') if isinstance(logger, dict) else None
        if isinstance(backends, list) and not {'tensorboard', 'jsonl'} & set(map(str, backends)):
            where = f"to {backends} only (logger.backends)" if backends else "to no backend (logger.backends=[])"
            raise ConfigError(f"{run_dir}: the run logged {where}, and -m plot reads 'tensorboard' and 'jsonl' logs; "
                              f"add one of them to logger.backends for the runs you will plot")
        raise ConfigError(f"{run_dir}: its log/ holds no values plot reads yet (TensorBoard's or scalars.jsonl: "
                          f"logger.backends 'tensorboard' or 'jsonl'); plot it once it has trained, with one of them")
    if pauses is None:  # scalars.jsonl: one file for every sitting
        pauses = _inferred_pauses(scalars, run_dir)
    start = min(s.wall_time for series in tags.values() for s in series)
    to_env_steps = _train_iter_to_env_steps(tags)
    curves: Dict[str, Dict[str, Curve]] = {}
    train_tag = next((t for t in TRAIN_RETURN_TAGS if t in tags), None)
    for name, tag, by_env_step in (('eval', EVAL_TAG, True), ('train', train_tag, True),
                                   ('loss', LOSS_TAG, False), ('entropy', ENTROPY_TAG, False)):
        series: List[Scalar] = tags.get(tag, []) if tag else []
        if not series:
            continue
        y = np.array([s.value for s in series])
        wall = training_seconds(np.array([s.wall_time for s in series]), start, pauses)
        if by_env_step:
            steps = np.array([s.step for s in series], dtype=np.float64)
        else:
            steps = to_env_steps(series)
        curves[name] = {'env_steps': Curve(steps, y), 'wall_s': Curve(wall, y)}
    return RunCurves(run_dir, key, label, curves)


def _read_sittings(log_dir: str) -> Tuple[List[Scalar], Optional[List[Tuple[float, float]]]]:
    """The scalars of ``log_dir`` (as ``read_scalars`` reads them) and the pauses between the run's sittings, as
    (wall time the pause began, wall time it ended): None where the log does not record its sittings.

    Every sitting (the first start and each ``--resume``) opens an event file of its own, which begins with an event
    stamped when that sitting opened its logger: a pause runs from the last scalar of one sitting's file to the
    opening of the next file that holds scalars. ``scalars.jsonl`` (the ``jsonl`` backend) is appended by every
    sitting and records no such mark: None."""
    events = event_files(log_dir)  # (the files read_scalars reads, one per sitting)
    if not events:
        return read_scalars(log_dir), None
    scalars: List[Scalar] = []
    sittings: List[int] = []
    pauses: List[Tuple[float, float]] = []
    last: Optional[float] = None
    for path in events:
        part = read_event_file(path)
        if not part:
            continue
        sittings.append(len(scalars))
        opened = min(_event_file_opened(path, part[0].wall_time), min(s.wall_time for s in part))
        if last is not None and opened > last:
            pauses.append((last, opened))
        last = max([s.wall_time for s in part] + ([last] if last is not None else []))
        scalars += part
    return latest_timeline(scalars, sittings), pauses


def _event_file_opened(path: str, default: float) -> float:
    """The wall time of an event file's first event (tensorboardX writes its file-version event when the writer
    opens); ``default`` where that record cannot be read."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    try:
        with open(path, 'rb') as f:
            head = f.read(12)
            (length,) = struct.unpack('<Q', head[:8])
            return float(Event.FromString(f.read(length)).wall_time) or default
    except Exception:  # noqa: BLE001 - a torn or foreign first record: the first scalar marks the sitting instead
        return default


def _inferred_pauses(scalars: List[Scalar], run_dir: str) -> List[Tuple[float, float]]:
    """Pauses between sittings of a log that does not mark them (``scalars.jsonl``), from ``summary.json``'s
    ``wall_s`` (the seconds the run trained, over every sitting): while the logged values span more wall time than
    that, the longest remaining gap between consecutive values is a pause (as much of it as the excess). Nothing is
    taken out when the summary is missing or older than the log (a run still training after a resume: its summary's ``env_steps`` is below the
    last logged env step)."""
    try:
        with open(os.path.join(run_dir, 'summary.json'), encoding='utf-8') as f:
            summary = json.load(f)
        trained, summary_steps = float(summary['wall_s']), float(summary['env_steps'])
    except (OSError, ValueError, KeyError, TypeError):
        return []
    logged_steps = [s.step for s in scalars if s.tag.startswith(ENV_STEP_PREFIXES)]
    times = np.unique([s.wall_time for s in scalars])
    if len(times) < 2 or not np.isfinite(trained) or (logged_steps and max(logged_steps) > summary_steps):
        return []
    excess = float(times[-1] - times[0]) - trained
    gaps = np.diff(times)
    pauses: List[Tuple[float, float]] = []
    for index in np.argsort(-gaps, kind='stable'):
        if excess <= 0:
            break
        cut = min(float(gaps[index]), excess)  # (no more than the excess: a long real gap is not taken out whole)
        pauses.append((float(times[index]), float(times[index]) + cut))
        excess -= cut
    return sorted(pauses)


def training_seconds(wall: np.ndarray, start: float, pauses: Sequence[Tuple[float, float]]) -> np.ndarray:
    """Seconds trained by wall-clock times ``wall``: the time since ``start`` less the parts of ``pauses`` (wall-time
    intervals between sittings) before each. Non-decreasing in ``wall``, so a curve logged in time order stays
    monotone; a value logged at the end of a pause sits where the sitting before it ended."""
    wall = np.asarray(wall, dtype=np.float64)
    seconds = wall - start
    for begin, end in pauses:
        seconds -= np.clip(wall - begin, 0.0, max(end - begin, 0.0))
    return seconds


def _train_iter_to_env_steps(tags: Dict[str, List[Scalar]]):
    """A function placing learner scalars (logged by train iteration) on env steps.

    Every evaluation logs its mean return twice, by env step and by train iteration: those pairs map train
    iterations to env steps (linearly between evaluations). A log with fewer than two evaluations falls
    back to time: the env step last logged (by the collector or evaluator) when the value was written.
    """
    by_step, by_iter = tags.get(EVAL_TAG, []), tags.get(EVAL_TAG + '_by_iter', [])
    if len(by_step) == len(by_iter) >= 2:
        iters = np.array([s.step for s in by_iter], dtype=np.float64)
        env_steps = np.maximum.accumulate(np.array([s.step for s in by_step], dtype=np.float64))
        order = np.argsort(iters, kind='stable')
        return lambda series: np.interp([s.step for s in series], iters[order], env_steps[order])
    anchors = sorted((s.wall_time, s.step) for tag, series in tags.items() if tag.startswith(ENV_STEP_PREFIXES)
                     for s in series)
    if not anchors:
        return lambda series: np.full(len(series), np.nan)
    times, steps = np.array(anchors, dtype=np.float64).T
    steps = np.maximum.accumulate(steps)
    return lambda series: np.interp([s.wall_time for s in series], times, steps)


def mean_std_on_grid(curves: Sequence[Curve], points: int = 100) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and std over runs of curves linearly interpolated on a common grid up to the longest run's end, a run
    that ended sooner (solved, or its budget spent) holding its last value: cut at the shortest run's end, the mean
    hid every later evaluation of the others, and runs stop when solved, so a group's fastest seed cut it short."""
    start = max(float(c.x[0]) for c in curves)
    end = max(float(c.x[-1]) for c in curves)
    if len(curves) == 1 or end <= start:
        only = curves[0]
        return only.x, only.y, np.zeros_like(only.y)
    grid = np.linspace(start, end, points)
    values = np.stack([np.interp(grid, c.x, c.y) for c in curves])
    return grid, values.mean(axis=0), values.std(axis=0)


#: the four panels' titles: evaluation return, training return, loss and entropy
PANEL_TITLES = ('evaluation return (mean ± std over runs)', 'training episode return', 'loss (learner/total_loss)',
                'entropy (learner/entropy)')


def plot_format(out: str, said: Optional[str] = None) -> str:
    """The format ``out`` is drawn in (``OUT_FORMATS``, by its extension); a ``ConfigError`` naming ``--out`` (or
    ``said``: a default path's words) where ``out`` is a folder, ends in a separator, lies under a file, is in a
    folder this process cannot write, or ends in no extension ``OUT_FORMATS`` accepts."""
    from .utils import check_output_file

    out = os.fspath(out)
    accepted = f"{', '.join(list(OUT_FORMATS)[:-1])} or {list(OUT_FORMATS)[-1]}"
    if out.endswith(('/', os.sep)) or os.path.isdir(out):
        raise ConfigError(f"--out {out}: that is a folder; name the file to write in it, e.g. "
                          f"--out {os.path.join(out, CURVES_PNG)} (extension {accepted})")
    ext = os.path.splitext(out)[1].lower()
    if ext not in OUT_FORMATS:
        raise ConfigError(f"--out {out}: the file name must end in {accepted} (the extension picks the format)")
    check_output_file(out, said if said is not None else f"--out {out}", CURVES_PNG)
    return OUT_FORMATS[ext]


def check_run_dirs(run_dirs: Sequence[str]) -> None:
    """A ``ConfigError`` naming the first of ``run_dirs`` that is no run folder (missing, a file, no ``log/``) or that
    is given twice."""
    seen: Dict[str, str] = {}
    for run_dir in run_dirs:
        if not os.path.exists(run_dir):
            raise ConfigError(f"{run_dir}: no such folder; pass folders written by acframe training runs")
        if not os.path.isdir(run_dir):
            raise ConfigError(f"{run_dir}: a file, not a run folder; pass folders written by acframe training runs")
        if not os.path.isdir(os.path.join(run_dir, 'log')):
            raise ConfigError(f"{run_dir}: not a run folder (no log/); pass folders written by acframe training runs")
        real = os.path.realpath(run_dir)
        if real in seen:
            raise ConfigError(f"{run_dir}: the same run as {seen[real]}, given twice (it would count twice in the "
                              f"mean over runs); give each run once")
        seen[real] = run_dir


def plot_runs(run_dirs: Sequence[str], out: str, x_axis: str = 'env_steps', said: Optional[str] = None) -> Dict[str, Any]:
    """Draw the four panels of ``run_dirs`` into ``out``, in the format its extension names (``plot_format``: an
    SVG by ``plot_svg``, a PNG or PDF by matplotlib); returns what was drawn. A bad ``out`` or ``x_axis`` raises
    ``ConfigError`` before any run is read and nothing is written (``said``: how it names ``out``, default
    ``--out OUT``)."""
    from .utils import atomic_write_text

    if x_axis not in X_AXES:
        raise ConfigError(f"--x {x_axis!r} is not one of {', '.join(X_AXES)}")
    fmt = plot_format(out, said)
    if not run_dirs:
        raise ConfigError("-m plot needs at least one RUN_DIR (an experiment folder of a training run)")
    check_run_dirs(run_dirs)
    runs = [load_run_curves(d) for d in run_dirs]
    groups: Dict[str, List[RunCurves]] = {}
    for run in runs:
        groups.setdefault(run.config_key, []).append(run)
    labels = _unique_labels([g[0].label for g in groups.values()], [json.loads(key) for key in groups])
    panels = _panels(list(groups.values()), labels, x_axis)
    x_label = 'env steps' if x_axis == 'env_steps' else 'training seconds'
    if fmt == 'svg':
        from .plot_svg import svg_figure

        atomic_write_text(out, svg_figure(list(zip(PANEL_TITLES, panels)), x_label))
    else:
        _draw_matplotlib(panels, x_label, out, fmt)
    return {'file': os.path.abspath(out), 'runs': len(runs), 'configs': labels, 'x': x_axis}


def _panels(groups: List[List[RunCurves]], labels: List[str], x_axis: str) -> List[List[Any]]:
    """Each panel's lines (``plot_svg.Series``): per config, the evaluation runs faintly with their mean ± std over
    runs, and every run's training return, loss and entropy."""
    from .plot_svg import Series

    panels: List[List[Any]] = [[], [], [], []]
    for colour, (members, label) in enumerate(zip(groups, labels)):
        legend = f"{label} ({len(members)} run{'s' if len(members) > 1 else ''})"
        evals = [r.curves['eval'][x_axis] for r in members if 'eval' in r.curves]
        if evals:
            panels[0].extend(Series(c.x, c.y, colour, faint=True, markers=True) for c in evals)
            grid, mean, std = mean_std_on_grid(evals)
            held = len({float(c.x[-1]) for c in evals}) > 1  # (runs that ended sooner hold their last evaluation)
            panels[0].append(Series(grid, mean, colour, label=legend[:-1] + '; ended runs hold their last)' if held
                                    else legend, band=std))
        for panel, name in zip(panels[1:], ('train', 'loss', 'entropy')):
            first = True
            for run in members:
                if name in run.curves:
                    c = run.curves[name][x_axis]
                    panel.append(Series(c.x, c.y, colour, label=legend if first else None, markers=len(c.x) < 30))
                    first = False
    return panels


def _draw_matplotlib(panels: List[List[Any]], x_label: str, out: str, fmt: str) -> None:
    """The panels drawn by matplotlib into ``out`` as ``fmt`` ('png': 1200 x 900 pixels, or 'pdf')."""
    from matplotlib.figure import Figure

    from .utils import atomic_write_with

    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    axes = fig.subplots(2, 2).ravel()
    for ax, title, lines in zip(axes, PANEL_TITLES, panels):
        for line in lines:
            colour = f'C{line.colour % 10}'
            if line.faint:
                ax.plot(line.x, line.y, color=colour, alpha=0.25, linewidth=0.8, marker='.', markersize=3)
                continue
            ax.plot(line.x, line.y, color=colour, linewidth=2 if line.band is not None else 1,
                    alpha=1.0 if line.band is not None else 0.8, label=line.label,
                    marker='.' if line.markers else None, markersize=4)
            if line.band is not None:
                ax.fill_between(line.x, line.y - line.band, line.y + line.band, color=colour, alpha=0.2)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(x_label)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8, loc='best')
        else:
            ax.text(0.5, 0.5, 'not logged', transform=ax.transAxes, ha='center', va='center', color='grey')
    # fixed margins: tight_layout measured every tick label and cost ~0.5 s at the end of every run
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.08, top=0.95, wspace=0.18, hspace=0.32)
    atomic_write_with(out, lambda tmp: fig.savefig(tmp, format=fmt, dpi=DPI))


def _unique_labels(labels: List[str], configs: List[Dict[str, Any]]) -> List[str]:
    """Each group's label; where one repeats (the same exp_name, another config), a later group names the first
    key in which its config differs from the first group's and how many more (``cartpole_impala
    (policy.learn.learning_rate=0.0003)``). ``configs`` are the groups' configs without ``GROUPING_IGNORES`` (a
    budget or a logger never tells groups apart), so every differing key counts, ``import_names`` and ``init_from``
    too; a number (``cartpole_a2c #2``) only where the configs differ in how a value is written (1 and 1.0)."""
    from .config.ding_compat import get_path
    from .config.run_folder import RESUME_FREE_KEYS, config_differences

    first: Dict[str, int] = {}
    seen: Dict[str, int] = {}
    result = []
    for index, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if label not in first:
            first[label] = index
            result.append(label)
            continue
        old, new = configs[first[label]], configs[index]
        keys = sorted(config_differences(old, new) +  # which leaves out the keys a --resume may change
                      [key for key in RESUME_FREE_KEYS if key in old or key in new
                       if json.dumps(old.get(key), sort_keys=True) != json.dumps(new.get(key), sort_keys=True)])
        if not keys:
            result.append(f"{label} #{seen[label]}")
            continue
        # a key set in both configs first: one that is None in either (a default resolved in one of them, such as
        # parallel.actor_num) tells the runs apart less than the setting that made them differ
        keys.sort(key=lambda key: (_missing_or_none(old, key) or _missing_or_none(new, key), key))
        more = f" and {len(keys) - 1} more" if len(keys) > 1 else ''
        # the first of those keys whose value no earlier label shows (two trials of a study share n_sample=64 and
        # differ in the learning rate: one label for both was two curves in one legend entry)
        named = (f"{label} ({key}={str(repr(get_path(configs[index], key)))[:24]}{more})" for key in keys)
        result.append(next((text for text in named if text not in result), f"{label} #{seen[label]}"))
    return result



def _missing_or_none(config: Dict[str, Any], key: str) -> bool:
    from .config.ding_compat import MISSING, get_path

    return get_path(config, key) in (None, MISSING)


def default_plot_path(run_dirs: Sequence[str]) -> str:
    """One run: its ``curves.png``; several: ``./curves.png``. The runs are checked first (``check_run_dirs``): a
    default inside what is no run folder would be refused as an ``--out`` the user never gave."""
    check_run_dirs(run_dirs)
    return os.path.join(run_dirs[0], CURVES_PNG) if len(run_dirs) == 1 else CURVES_PNG


def write_run_curves(run_dir: str, echo: Optional[Any] = None) -> Optional[str]:
    """``run_dir/curves.svg`` at the end of a run; a failure to draw is reported, not raised (the run is done)."""
    path = os.path.join(run_dir, CURVES_SVG)
    try:
        plot_runs([run_dir], path)
    except Exception as exc:  # drawing must never cost a finished run its summary
        if echo is not None:
            echo(f"[acframe] could not draw {path}: {type(exc).__name__}: {exc}")
        return None
    return path


def result_line(info: Dict[str, Any]) -> str:
    return (f"[plot] {info['runs']} run{'s' if info['runs'] > 1 else ''} of {len(info['configs'])} "
            f"config{'s' if len(info['configs']) > 1 else ''} ({', '.join(info['configs'])}) by {info['x']} -> {info['file']}")
