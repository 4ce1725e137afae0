"""The cost of a recurrent core (``policy.model.rnn``): collection rate and PPO update time, recurrent against
feed-forward, on the same envs, rollout and minibatch sizes.

* collection: ``SampleCollector.collect`` env-steps/s of PPO's collect mode on ``cartpole_novel`` (8 envs, 32 steps
  per env a rollout), the feed-forward model against the same model with an LSTM after its encoder;
* update: the seconds of one PPO gradient step (``learn_mode.forward`` on one minibatch) and of ``prepare`` (the
  rollout's unroll for log pi_old, V_old and GAE), with episode starts inside the sequences as collected.

The three models run side by side in one process, interleaved rollout by rollout (a shared machine's load then
falls on all three alike); each repeat reports the medians over its rollouts, and the ratios are the medians over
the repeats of each repeat's ratio.

``--breakdown`` instead says where the recurrent model's extra time goes, each part timed in place (interleaved as
above, so a part's cost includes what it does to the caches and the allocator of the loop around it):

* collection, µs per step of 8 envs: the feed-forward model; the LSTM model; the LSTM model whose core does no cell
  (``step`` gives back its features and a new copy of the state: what is left is the state's handling, its resets
  and the segment's ``rnn_state``/``episode_start``); the same without the resets; and the feed-forward model with one
  ``torch.lstm_cell`` of the LSTM's size on its features per step (the result dropped: the cell alone);
* update, ms: the gradient steps of both models as above; the LSTM's fused call alone (``torch.lstm`` forward and
  backward on the lanes' shape, 8 × (32 + 3) rows of 65 inputs); the clip and optimizer step alone of each model
  (random gradients: the LSTM's weights are four tensors of 4·64 rows more).

``--task pixels`` measures the same on Atari-sized frames (84 x 84, 4 stacked, uint8; ``toy_pixel_dot``, no ROM)
through ``pong_ppo.py``'s model (the Nature CNN and a 512-unit layer), the core 256 units (the IMPALA paper's): where
the encoder does an Atari agent's work, what the core adds is a smaller share of each step.

    python bench/bench_recurrent.py [--repeats 5] [--hidden 64] [--seq-len 0] [--clock cpu|wall] [--ab-padded]
    python bench/bench_recurrent.py --task pixels [--repeats 3] [--rollouts 5]
    python bench/bench_recurrent.py --breakdown [--repeats 3]
    python bench/bench_recurrent.py --cuda [--repeats 3]   # the models on the GPU (policy.cuda), wall time
    python bench/bench_recurrent.py --fused-call [--repeats 2]

``--fused-call`` splits the LSTM's fused call (``nn.LSTM`` forward and backward alone, on the lanes' 35 x 8 rows of
65 inputs and on one step of 8 rows) into ATen's two ops (``torch.profiler``'s self time per call) and oneDNN's own
execution of the primitives inside them (``ONEDNN_VERBOSE=1``, in a child process per repeat): what is left is
ATen's set-up around oneDNN, per call.

With ``--cuda`` every model runs on the GPU (``policy.cuda=True``: collection's forward too, the envs stay on the
CPU) and each timed part ends with ``torch.cuda.synchronize()``, on the wall clock.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, Optional

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from acframe.config import compile_config  # noqa: E402
from acframe.envs import make_env_manager  # noqa: E402
from acframe.policy import create_policy  # noqa: E402
from acframe.utils import set_torch_threads  # noqa: E402
from acframe.worker import SampleCollector  # noqa: E402

ENVS, STEPS = 8, 32


#: ``--task``: the env and the feed-forward model the core goes into. ``novel``: CartPole without velocities and the
#: shipped PPO model (64-unit layers); ``pixels``: Atari-sized frames (``toy_pixel_dot`` at 84 x 84, 4 stacked uint8
#: frames: no ROM needed) through the Nature CNN and a 512-unit layer (``pong_ppo.py``'s model)
TASKS = {
    'novel': (dict(env_id='cartpole_novel'),
              dict(encoder_hidden_size_list=[64], actor_head_hidden_size=64, critic_head_hidden_size=64)),
    'pixels': (dict(env_id='dot', env_kwargs=dict(size=84, frame_stack=4, episode_len=27)),
               dict(encoder='nature_cnn', encoder_hidden_size_list=[512], activation='relu')),  # pong_ppo.py's model
}
#: ``--task pixels``' env type (``novel``'s is gymnasium's, by its id)
TASK_TYPES = {'novel': 'gym', 'pixels': 'toy_pixel_dot'}


def build(rnn: Optional[str], hidden: int, seq_len: int, batch_size: int, cuda: bool = False,
          task: str = 'novel') -> Any:
    env_cfg, model = TASKS[task]
    model = dict(model, share_encoder=True, rnn=dict(type=rnn, hidden_size=hidden, seq_len=seq_len))
    main = dict(env=dict(env_cfg, collector_env_num=ENVS, stop_value=None),
                policy=dict(model=model, cuda=cuda, collect=dict(n_sample=ENVS * STEPS),
                            learn=dict(batch_size=batch_size)))
    cfg = compile_config((main, dict(env=dict(type=TASK_TYPES[task]), policy=dict(type='ppo'))), seed=0)
    env = make_env_manager(cfg, 'collector', ENVS, cfg.seed)
    torch.manual_seed(0)
    return env, create_policy(cfg, env.observation_space, env.action_space)


KINDS = (('feed_forward', None), ('lstm', 'lstm'), ('gru', 'gru'))
#: ``--ab-padded``: a fourth model, the LSTM whose gradient step unrolls with fragment-end states (the padded
#: fragments, as before the one-lane-per-column unroll), interleaved with the others: an A/B in one process
PADDED = ('lstm_padded', 'lstm')


def force_fragment_ends(policy: Any) -> None:
    """Make ``policy``'s gradient step unroll as it did before ``ends=False`` (the padded fragments)."""
    unroll = policy._evaluate_unroll

    def with_ends(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop('ends', None)
        return unroll(*args, **kwargs)
    policy._evaluate_unroll = with_ends


def measure(hidden: int, seq_len: int, batch_size: int, rollouts: int,
            clock: Callable[[], float] = time.process_time, kinds: tuple = KINDS,
            cuda: bool = False, task: str = 'novel') -> Dict[str, Dict[str, float]]:
    """One repeat: the three models side by side, interleaved rollout by rollout (collect one rollout with each,
    then prepare it and take its gradient steps), so a change of the machine's load falls on all three alike;
    the medians over the rollouts. ``clock``: the process's CPU time (default: time other processes take on a shared
    machine is not counted) or ``time.perf_counter`` (wall time)."""
    runs = {}
    for name, rnn in kinds:
        env, policy = build(rnn, hidden, seq_len, batch_size, cuda, task)
        if name == PADDED[0]:
            force_fragment_ends(policy)
        collector = SampleCollector(env, policy.collect_mode, ENVS * STEPS)
        collector.collect()  # warm-up
        runs[name] = (env, policy.learn_mode, collector)
    times: Dict[str, Dict[str, list]] = {name: {'collect': [], 'prepare': [], 'step': [], 'starts': []} for name in runs}
    for _ in range(rollouts):
        for name, (_, learn, collector) in runs.items():
            t0 = clock()
            segment = collector.collect()
            times[name]['collect'].append(clock() - t0)
            t0 = clock()
            plan = learn.prepare(segment)
            times[name]['prepare'].append(clock() - t0)
            for batch in learn.minibatches(plan):
                t0 = clock()
                learn.forward(batch)
                times[name]['step'].append(clock() - t0)
            starts = int(segment.episode_start[1:].sum()) if 'episode_start' in segment else 0
            times[name]['starts'].append(starts)
    for env, _, _ in runs.values():
        env.close()
    return {name: {'collect_steps_per_s': ENVS * STEPS / statistics.median(t['collect']),
                   'prepare_ms': 1e3 * statistics.median(t['prepare']),
                   'grad_step_ms': 1e3 * statistics.median(t['step']),
                   'episode_starts_inside_per_rollout': statistics.mean(t['starts'])} for name, t in times.items()}


def breakdown(hidden: int, rollouts: int, clock: Callable[[], float] = time.process_time) -> Dict[str, Dict[str, float]]:
    """One repeat of ``--breakdown`` (see the module's docstring): medians over ``rollouts`` rounds, each part once
    per round, interleaved."""
    from acframe.policy.base import clip_gradients

    def no_cell(core: Any) -> None:
        core.step = lambda x, state: (x[:, :hidden], state + 0)

    def with_cell(model: Any) -> None:
        lstm = torch.nn.LSTM(hidden, hidden)
        weights, encoder = lstm._flat_weights, model.actor_encoder
        zero = torch.zeros(ENVS, hidden)

        class EncoderAndCell(torch.nn.Module):
            def forward(self, obs: Any) -> torch.Tensor:
                feature = encoder(obs)
                torch.lstm_cell(feature, (zero, zero), *weights)
                return feature
        model.actor_encoder = EncoderAndCell()

    variants = {'feed_forward': (None, None), 'lstm': ('lstm', None), 'lstm_without_cell': ('lstm', 'no_cell'),
                'lstm_without_cell_and_resets': ('lstm', 'no_cell_no_resets'), 'feed_forward_with_cell': (None, 'cell')}
    collectors, learners, closing = {}, {}, []
    for name, (rnn, change) in variants.items():
        env, policy = build(rnn, hidden, 0, ENVS * STEPS)
        closing.append(env)
        if change is not None and change.startswith('no_cell'):
            no_cell(policy.model.core)
        if change == 'no_cell_no_resets':
            policy._collect_states.begin = lambda env_ids: None
        if change == 'cell':
            with_cell(policy.model)
        collector = SampleCollector(env, policy.collect_mode, ENVS * STEPS)
        collector.collect()  # warm-up
        collectors[name] = collector
        if change is None:
            learn = policy.learn_mode
            batch = next(iter(learn.minibatches(learn.prepare(collector.collect()))))
            params = list(policy.model.parameters())
            learners[name] = (learn, batch, params, policy._optimizer, policy._cfg.learn)
    lstm = torch.nn.LSTM(hidden + 1, hidden)  # the lanes' call: features and the reset flag
    lanes = torch.randn(STEPS + 3, ENVS, hidden + 1, requires_grad=True)
    times: Dict[str, list] = {}

    def timed(key: str, fn: Callable[[], Any], repeat: int = 1) -> None:
        t0 = clock()
        for _ in range(repeat):
            fn()
        times.setdefault(key, []).append((clock() - t0) / repeat)

    for _ in range(rollouts):
        for name, collector in collectors.items():
            timed(f'collect_us_per_step.{name}', collector.collect)
        for name, (learn, batch, params, optimizer, cfg) in learners.items():
            timed(f'update_ms.grad_step.{name}', lambda: learn.forward(batch), 5)

            def clip_and_step() -> None:
                for param in params:
                    param.grad = torch.randn_like(param)  # (untimed part below subtracted: see the key)
                clip_gradients(params, cfg.grad_clip_type, cfg.grad_clip_value)
                optimizer.step()
            timed(f'update_ms.clip_and_optimizer_step.{name}', clip_and_step, 5)
            timed(f'update_ms.random_gradients.{name}', lambda: [torch.randn_like(p) for p in params], 5)
        timed('update_ms.fused_lstm_call.forward_and_backward_8x35_rows', lambda: lstm(lanes)[0].sum().backward(), 5)
    for env in closing:
        env.close()
    report: Dict[str, Dict[str, float]] = {}
    for key, values in times.items():
        group, name = key.rsplit('.', 1)
        scale = 1e6 / STEPS if group.startswith('collect') else 1e3
        report.setdefault(group, {})[name] = statistics.median(values) * scale
    optimizer_ms = report.pop('update_ms.clip_and_optimizer_step')
    gradients_ms = report.pop('update_ms.random_gradients')
    report['update_ms.clip_and_optimizer_step'] = {k: v - gradients_ms[k] for k, v in optimizer_ms.items()}
    return report


def fused_call_child(steps: int, lanes: int, hidden: int, calls: int) -> None:
    """``--fused-call``'s child (run with ``ONEDNN_VERBOSE=1``): ``calls`` forward and backward passes of one LSTM
    layer after as many (at most 100) of warm-up, under the profiler; prints ATen's ops' self time per call as
    ``ATEN name us``."""
    from torch.profiler import ProfilerActivity, profile
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(hidden + 1, hidden)  # the features and the reset flag column, as the lanes' call
    x = torch.randn(steps, lanes, hidden + 1, requires_grad=True)
    state = (torch.zeros(1, lanes, hidden), torch.zeros(1, lanes, hidden))
    for _ in range(min(100, calls)):
        lstm(x, state)[0].sum().backward()
    print('WARM', flush=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            lstm(x, state)[0].sum().backward()
    for event in prof.key_averages():
        if event.key in ('aten::mkldnn_rnn_layer', 'aten::mkldnn_rnn_layer_backward'):
            print(f'ATEN {event.key} {event.self_cpu_time_total / event.count:.1f}', flush=True)


FUSED_CALLS = 300  # --fused-call: timed calls per child


def fused_call_split(hidden: int, repeats: int, calls: int = FUSED_CALLS) -> Dict[str, Any]:
    """µs per call of ATen's LSTM ops and of oneDNN's primitives inside them (``--fused-call``)."""
    import subprocess
    out: Dict[str, Any] = {}
    for steps, lanes in ((STEPS + 3, ENVS), (1, ENVS)):
        rounds = []
        for _ in range(repeats):
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), '--fused-call-child', str(steps),
                                   str(lanes), str(hidden), str(calls)], env=dict(os.environ, ONEDNN_VERBOSE='1'),
                                  capture_output=True, text=True, check=True)
            aten: Dict[str, float] = {}
            onednn: Dict[str, list] = {}
            warm = False
            for line in proc.stdout.splitlines():
                warm = warm or line == 'WARM'
                if line.startswith('ATEN '):
                    aten[line.split()[1]] = float(line.split()[2])
                elif warm and line.startswith('onednn_verbose') and ',primitive,exec,' in line:
                    fields = line.split(',')
                    kind = fields[5] if fields[5] != 'rnn' else f'rnn {fields[7]}'  # rnn forward_training / backward
                    onednn.setdefault(kind, []).append(float(fields[-1]) * 1000.0)  # ms -> µs
            if 'rnn forward_training' not in onednn or len(aten) < 2:
                raise SystemExit('bench_recurrent.py --fused-call: oneDNN ran no LSTM primitive here (a torch built '
                                 f'without oneDNN, or the call took another path); the child said: {proc.stderr[-300:]}')
            per_call = {k: sum(v) / len(v) for k, v in onednn.items()}
            reorders = sum(onednn.get('reorder', [])) / max(1, len(onednn.get('rnn backward', [])))
            rounds.append({
                'aten_forward_us': aten['aten::mkldnn_rnn_layer'],
                'onednn_forward_us': per_call['rnn forward_training'],
                'aten_backward_us': aten['aten::mkldnn_rnn_layer_backward'],
                'onednn_backward_us': per_call['rnn backward'],
                'onednn_reorders_per_call_us': reorders,
            })
        key = f'{steps}x{lanes}_rows'
        out[key] = {k: [round(r[k], 1) for r in rounds] for k in rounds[0]}
        out[key]['aten_setup_per_call_us'] = [
            round(r['aten_forward_us'] + r['aten_backward_us'] - r['onednn_forward_us'] - r['onednn_backward_us']
                  - r['onednn_reorders_per_call_us'], 1) for r in rounds]
    return out


def cuda_clock() -> float:
    """The wall clock once the GPU's queue has drained (``--cuda``: the process's CPU time would miss the GPU's)."""
    torch.cuda.synchronize()
    return time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=5, help='repeats of each measurement (the median is reported)')
    parser.add_argument('--rollouts', type=int, default=20, help='rollouts collected and learned per repeat')
    parser.add_argument('--hidden', type=int, default=None,
                        help='units of the recurrent core (default 64; 256 with --task pixels, the IMPALA paper\'s)')
    parser.add_argument('--task', choices=sorted(TASKS), default='novel',
                        help='novel: CartPole without velocities, 64-unit MLP; pixels: 84x84x4 uint8 frames, Nature CNN')
    parser.add_argument('--seq-len', type=int, default=0, help='policy.model.rnn.seq_len (0: whole rollout columns)')
    parser.add_argument('--batch-size', type=int, default=256, help='policy.learn.batch_size (transitions)')
    parser.add_argument('--clock', choices=('cpu', 'wall'), default='cpu',
                        help="the process's CPU time (one thread; other processes' load not counted) or wall time")
    parser.add_argument('--ab-padded', action='store_true',
                        help="also time the LSTM's gradient step with the padded fragments (the unroll before)")
    parser.add_argument('--breakdown', action='store_true',
                        help="where the LSTM's extra time goes, each part timed in place (see the docstring)")
    parser.add_argument('--cuda', action='store_true',
                        help='the models on the GPU (policy.cuda), timed on the wall clock after a synchronize')
    parser.add_argument('--fused-call', action='store_true',
                        help="the LSTM's fused call split into ATen's set-up and oneDNN's execution (see the docstring)")
    parser.add_argument('--fused-call-child', nargs=4, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fused_call_child:
        set_torch_threads(1)
        fused_call_child(*args.fused_call_child)
        return
    if args.cuda and (args.breakdown or not torch.cuda.is_available()):
        parser.error('--cuda needs a GPU (torch.cuda.is_available()) and times the models, not --breakdown')
    kinds = KINDS + ((PADDED,) if args.ab_padded else ())
    if args.hidden is None:
        args.hidden = 256 if args.task == 'pixels' else 64
    if args.breakdown and args.task != 'novel':
        parser.error('--breakdown measures --task novel')
    set_torch_threads(1)
    if args.fused_call:
        print(json.dumps({'hidden': args.hidden, 'threads': 1, 'calls': FUSED_CALLS,
                          **fused_call_split(args.hidden, args.repeats)}, indent=1))
        return
    if args.breakdown:
        clock = time.process_time if args.clock == 'cpu' else time.perf_counter
        runs = [breakdown(args.hidden, args.rollouts, clock) for _ in range(args.repeats)]
        out: Dict[str, Any] = {'envs': ENVS, 'steps_per_env': STEPS, 'hidden': args.hidden, 'clock': args.clock,
                               'threads': torch.get_num_threads()}
        for group in runs[0]:
            out[group] = {k: round(statistics.median(r[group][k] for r in runs), 3) for k in runs[0][group]}
        print(json.dumps(out, indent=1))
        return
    report: Dict[str, Any] = {'task': args.task, 'envs': ENVS, 'steps_per_env': STEPS, 'batch_size': args.batch_size,
                              'seq_len': args.seq_len, 'hidden': args.hidden, 'threads': torch.get_num_threads(),
                              'clock': args.clock}
    clock = cuda_clock if args.cuda else time.process_time if args.clock == 'cpu' else time.perf_counter
    if args.cuda:
        report['clock'] = 'wall, cuda synchronized'
    runs = [measure(args.hidden, args.seq_len, args.batch_size, args.rollouts, clock, kinds, args.cuda, args.task)
            for _ in range(args.repeats)]
    for name, _ in kinds:
        report[name] = {key: round(statistics.median(r[name][key] for r in runs), 3) for key in runs[0][name]}
    for name, _ in kinds[1:]:  # the median over the repeats of each repeat's ratio
        def ratio(key: str) -> float:
            return round(statistics.median(r[name][key] / r['feed_forward'][key] for r in runs), 3)
        report[f'{name}_vs_feed_forward'] = {'collect_rate': ratio('collect_steps_per_s'),
                                             'grad_step_time': ratio('grad_step_ms'),
                                             'prepare_time': ratio('prepare_ms')}
    print(json.dumps(report, indent=1))


if __name__ == '__main__':
    main()
