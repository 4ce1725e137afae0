"""Learning curves of runs: ``acframe -m plot RUN_DIR [RUN_DIR ...] [--out FILE.png] [--x env_steps|wall_s]``.

Four panels from the runs' tensorboardX logs (read by ``acframe.logs``; tensorboard is not needed):

* evaluation return — per config, the mean over its runs (interpolated on a common x grid, up to the shortest
  run) with a ± std band, and each run's own points faintly;
* training episode return — each run's logged mean return of the collector's finished episodes;
* loss — each run's ``learner/total_loss``;
* entropy — each run's ``learner/entropy`` (the policy's entropy).

Runs of the same config (the compiled config without its seed and experiment name) share one colour; the
legend names a config by its ``exp_name``. The x axis is env steps (learner values, logged by train
iteration, are placed on env steps through the evaluations, which log both) or wall-clock seconds since the run's
first logged value. Every finished run also writes ``curves.svg`` into its folder (``write_run_curves``; the same
panels, drawn without matplotlib in milliseconds); ``--out FILE.svg`` draws that form, ``--out FILE.png`` matplotlib's.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .errors import ConfigError
from .logs import Scalar, read_scalars, scalars_by_tag

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
    compiles nothing and imports nothing."""
    from .config.run_folder import read_run_record

    cfg = dict(read_run_record(run_dir)['config'])
    label = str(cfg.get('exp_name') or os.path.basename(os.path.abspath(run_dir)))[:LABEL_MAX]
    for key in ('seed', 'exp_name'):
        cfg.pop(key, None)
    return json.dumps(cfg, sort_keys=True, default=str), label


def load_run_curves(run_dir: str) -> RunCurves:
    """The eval-return, training-return, loss and entropy curves of one run folder."""
    from .entry.run_folder import check_folder_is_data

    if os.path.isdir(run_dir):
        check_folder_is_data(run_dir)
    if not os.path.isdir(os.path.join(run_dir, 'log')):
        raise ConfigError(f"{run_dir}: not a run folder (no log/); pass folders written by acframe training runs")
    key, label = _config_identity(run_dir)
    tags = scalars_by_tag(read_scalars(os.path.join(run_dir, 'log')))
    if not tags:
        raise ConfigError(f"{run_dir}: its log/ holds no values plot reads yet (TensorBoard's or scalars.jsonl: "
                          f"logger.backends 'tensorboard' or 'jsonl'); plot it once it has trained, with one of them")
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
        wall = np.array([s.wall_time - start for s in series])
        if by_env_step:
            steps = np.array([s.step for s in series], dtype=np.float64)
        else:
            steps = to_env_steps(series)
        curves[name] = {'env_steps': Curve(steps, y), 'wall_s': Curve(wall, y)}
    return RunCurves(run_dir, key, label, curves)


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
    """Mean and std over runs of curves linearly interpolated on a common grid up to the shortest run's end."""
    start = max(float(c.x[0]) for c in curves)
    end = min(float(c.x[-1]) for c in curves)
    if len(curves) == 1 or end <= start:
        only = curves[0]
        return only.x, only.y, np.zeros_like(only.y)
    grid = np.linspace(start, end, points)
    values = np.stack([np.interp(grid, c.x, c.y) for c in curves])
    return grid, values.mean(axis=0), values.std(axis=0)


#: the four panels' titles: evaluation return, training return, loss and entropy
PANEL_TITLES = ('evaluation return (mean ± std over runs)', 'training episode return', 'loss (learner/total_loss)',
                'entropy (learner/entropy)')


def plot_runs(run_dirs: Sequence[str], out: str, x_axis: str = 'env_steps') -> Dict[str, Any]:
    """Draw the four panels of ``run_dirs`` into ``out``: an SVG (``.svg``, ``plot_svg``) or a PNG (matplotlib);
    returns what was drawn."""
    from .utils import atomic_write_text

    if x_axis not in X_AXES:
        raise ConfigError(f"--x {x_axis!r} is not one of {', '.join(X_AXES)}")
    if not run_dirs:
        raise ConfigError("-m plot needs at least one RUN_DIR (an experiment folder of a training run)")
    runs = [load_run_curves(d) for d in run_dirs]
    groups: Dict[str, List[RunCurves]] = {}
    for run in runs:
        groups.setdefault(run.config_key, []).append(run)
    labels = _unique_labels([g[0].label for g in groups.values()], [json.loads(key) for key in groups])
    panels = _panels(list(groups.values()), labels, x_axis)
    x_label = 'env steps' if x_axis == 'env_steps' else 'wall-clock seconds'
    if str(out).lower().endswith('.svg'):
        from .plot_svg import svg_figure

        atomic_write_text(out, svg_figure(list(zip(PANEL_TITLES, panels)), x_label))
    else:
        _draw_png(panels, x_label, out)
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
            panels[0].append(Series(grid, mean, colour, label=legend, band=std))
        for panel, name in zip(panels[1:], ('train', 'loss', 'entropy')):
            first = True
            for run in members:
                if name in run.curves:
                    c = run.curves[name][x_axis]
                    panel.append(Series(c.x, c.y, colour, label=legend if first else None, markers=len(c.x) < 30))
                    first = False
    return panels


def _draw_png(panels: List[List[Any]], x_label: str, out: str) -> None:
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
    atomic_write_with(out, lambda tmp: fig.savefig(tmp, format='png', dpi=DPI))


def _unique_labels(labels: List[str], configs: List[Dict[str, Any]]) -> List[str]:
    """Each group's label; where one repeats (the same exp_name, another config), a later group names the first
    key in which its config differs from the first group's and how many more (``cartpole_impala
    (policy.learn.learning_rate=0.0003)``), or a number when only a budget differs."""
    from .config.ding_compat import get_path
    from .config.run_folder import config_differences

    first: Dict[str, int] = {}
    seen: Dict[str, int] = {}
    result = []
    for index, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if label not in first:
            first[label] = index
            result.append(label)
            continue
        keys = config_differences(configs[first[label]], configs[index])
        if not keys:
            result.append(f"{label} #{seen[label]}")
            continue
        more = f" and {len(keys) - 1} more" if len(keys) > 1 else ''
        result.append(f"{label} ({keys[0]}={str(repr(get_path(configs[index], keys[0])))[:24]}{more})")
    return result



def default_plot_path(run_dirs: Sequence[str]) -> str:
    """One run: its ``curves.png``; several: ``./curves.png``."""
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
