"""One trial of a study: train the config with the sampled values on each seed, reporting to the pruner.

Each run is a normal serial acframe run (``serial_pipeline`` or ``serial_pipeline_onpolicy``, chosen by the
policy) in ``STUDY_DIR/trials/trial_<nnnn>_seed<s>/``, in this process, with the config's one torch thread.

Intermediate values: run ``j`` (of the trial's seeds) is cut into ``reports`` equal stretches of the budget; when
an evaluation has passed the end of stretch ``k``, the trial reports, at step ``j * reports + k``, the mean of
the finished runs' best evaluation returns and this run's best so far. A run's best leaves out its evaluation at
env step 0 (the untrained weights, the same in every trial of a seed). Every trial reports at the same steps, so
a median or successive-halving pruner compares like with like; a pruned trial stops its run at once.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ..config import compile_config
from ..config.run_folder import create_config_of
from ..worker import LearnerHook


class Pruned(Exception):
    """The pruner stopped the trial (raised through the run; the tuner turns it into ``optuna.TrialPruned``)."""

    def __init__(self, seed: int, env_step: int, value: float) -> None:
        super().__init__(f"pruned at seed {seed}, env step {env_step}: {value:.2f}")
        self.seed, self.env_step, self.value = seed, env_step, value


class PruningReporter(LearnerHook):
    """Reports a run's evaluations to an Optuna trial at the study's fixed steps and raises ``Pruned`` when told to."""

    def __init__(self, trial: Any, run_index: int, seed: int, finished_bests: Sequence[float], budget: int,
                 reports: int, can_prune: bool = True, echo: Optional[Callable[[str], None]] = None) -> None:
        self.trial = trial
        self.echo = echo
        self.run_index, self.seed = run_index, seed
        self.finished_bests = list(finished_bests)
        self.budget, self.reports = int(budget), int(reports)
        self.can_prune = can_prune
        self.best = -math.inf
        self.reported = 0  # stretches of this run already reported
        self.env_step = 0

    def after_eval(self, learner: Any, result: Dict[str, Any]) -> None:
        self.env_step = result['env_step']
        untrained = self.env_step <= 0  # the untrained weights' evaluation: not what the trial's values learned
        if not untrained:  # (its score: what the summary's best_eval_return counts, a confirmation's episodes too)
            self.best = max(self.best, result.get('score', result['return_mean']))
        if self.echo is not None:
            scored = '(the untrained weights: not scored)' if untrained else f"(best {self.best:.2f})"
            self.echo(f"[tune] trial {self.trial.number} seed {self.seed}: env step {self.env_step}, "
                      f"eval return {result['return_mean']:.2f} {scored}")
        if untrained:
            return
        self._report_until(min(self.reports, self.env_step * self.reports // self.budget))

    def finish(self, best: float, last: bool) -> None:
        """The run ended (budget spent or solved): its remaining stretches report its best (``best``: the run's
        best evaluation when none came after the start); the pruner is asked unless this was the trial's last run."""
        if self.best == -math.inf:
            self.best = best
        self.can_prune = self.can_prune and not last
        self._report_until(self.reports)

    def value(self) -> float:
        return (sum(self.finished_bests) + self.best) / (len(self.finished_bests) + 1)

    def _report_until(self, stretch: int) -> None:
        if stretch <= self.reported or self.best == -math.inf:
            return
        value = self.value()
        while self.reported < stretch:
            self.reported += 1
            self.trial.report(value, self.run_index * self.reports + self.reported)
        if self.can_prune and self.trial.should_prune():
            raise Pruned(self.seed, self.env_step, value)


def trial_config(base: Mapping[str, Any], values: Mapping[str, Any], budget: int, seed: int) -> Any:
    """The compiled config of one run: ``base`` with the sampled ``values``, the trial budget and ``seed``."""
    main = dict(base)
    return compile_config((main, create_config_of(main)), list(values.items()) + [('max_env_step', int(budget))],
                          seed=seed)


def run_dir_name(number: int, seed: int) -> str:
    return os.path.join('trials', f"trial_{number:04d}_seed{seed}")


def _unmuted(echo: Optional[Callable[[str], None]], stream: Any) -> Optional[Callable[[str], None]]:
    """``echo`` writing to ``stream`` (stdout as it was) while the run's own output is redirected."""
    if echo is None:
        return None

    def say(line: str) -> None:
        with contextlib.redirect_stdout(stream):
            echo(line)
    return say


def train_runs(trial: Any, base: Mapping[str, Any], values: Mapping[str, Any], seeds: Sequence[int], budget: int,
               reports: int, study_dir: str, echo: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """Train one run per seed; returns ``{'value', 'seed_values', 'run_dirs', 'env_steps'}``.

    ``Pruned`` propagates when the pruner stops the trial (the run is closed; its folder keeps its checkpoints).
    The runs' own output (progress, result line) is not printed: their folders hold it (``summary.json``, logs);
    ``echo`` gets one line per evaluation.
    """
    from ..entry import serial_pipeline, serial_pipeline_onpolicy
    from ..policy import policy_class

    configs = [trial_config(base, values, budget, seed) for seed in seeds]  # all checked before the first run
    pipeline = serial_pipeline_onpolicy if policy_class(configs[0]).on_policy else serial_pipeline
    bests: List[float] = []
    run_dirs: List[str] = []
    env_steps = 0
    for index, (seed, cfg) in enumerate(zip(seeds, configs)):
        run_dir = os.path.join(study_dir, run_dir_name(trial.number, seed))
        run_dirs.append(run_dir)
        trial.set_user_attr('run_dirs', [os.path.relpath(d, study_dir) for d in run_dirs])
        # the run's own lines are muted (the study prints its own); the reporter's go where stdout went before
        reporter = PruningReporter(trial, index, seed, bests, budget, reports, echo=_unmuted(echo, sys.stdout))
        main = dict(cfg, pipeline=None)  # (a trial is a serial run: the study warned once of a config written for another)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                policy = pipeline((main, create_config_of(main)), exp_dir=run_dir, progress=False,
                                  learner_hooks=[reporter])
        except Pruned as exc:
            trial.set_user_attr('env_steps', env_steps + exc.env_step)
            raise
        summary = policy.summary
        env_steps += int(summary['env_steps'])
        best = summary['best_eval_return']  # (with the evaluation of the untrained weights, at env step 0)
        best = -math.inf if best is None else float(best)
        # the best evaluation after training began (the run's best where there is none)
        best = reporter.best if reporter.best != -math.inf else best
        trial.set_user_attr('seed_values', {str(s): b for s, b in zip(seeds, bests + [best])})
        trial.set_user_attr('env_steps', env_steps)
        reporter.finish(best, last=index == len(seeds) - 1)
        bests.append(best)
    return {'value': sum(bests) / len(bests), 'seed_values': dict(zip(seeds, bests)), 'run_dirs': run_dirs,
            'env_steps': env_steps}
