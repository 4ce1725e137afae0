"""Compose an IMPALA (or, with --algo ppo, a PPO) training loop by hand from acframe's parts.

``serial_pipeline`` / ``serial_pipeline_onpolicy`` do all of this (plus checkpoints, resume, the progress line and
summary.json); writing the loop yourself shows what each worker does and lets you change the order, add logging or
swap a part:

    EnvManager ──▶ SampleCollector ──segment──▶ ReplayBuffer ──batch──▶ Learner ──▶ (weights shared in-process)
    EnvManager ──▶ Evaluator (deterministic actions) ──▶ mean return vs. stop_value

An on-policy algorithm (PPO, A2C) has no buffer: each rollout is prepared once (returns, advantages and the
behaviour policy's log-probabilities and values, ``learn_mode.prepare``) and the learner makes its gradient steps on
it (``Learner.train_rollout``: PPO's epochs of minibatches), then it is dropped:

    SampleCollector ──rollout──▶ learn_mode.prepare ──plan──▶ Learner.train_rollout

    python examples/compose_pipeline.py [--algo impala|ppo] [--max-env-step 30000] [--seed 0] [--exp-dir DIR] [key=value ...]

The buffer and the learner hooks are the config's (``build_buffer``, ``config_hooks``: a registered buffer or hook of
your own plugs in by its keys); the learner is given the buffer (a prioritized buffer gets each batch's priorities),
the hooks see every evaluation (``learner.after_eval``) and round (``learner.end_round``), and a hook ends the loop by
raising ``acframe.StopTraining`` (``learner.stop_requested`` says why). Logger backends, checkpoints on a schedule and
resume are the packaged pipelines' (``serial_pipeline``).
"""
from __future__ import annotations

import argparse

from acframe import build_buffer
from acframe.config import compile_config
from acframe.envs import make_env_manager
from acframe.policy import create_policy, policy_class
from acframe.utils import set_global_seed, set_torch_threads
from acframe.worker import Evaluator, Learner, LinearLRDecayHook, LogHook, SampleCollector, config_hooks


def train(max_env_step: int, seed: int, exp_dir: str = None, algo: str = 'impala', overrides: list = ()) -> dict:
    # the same config file the CLI uses, with a few keys overridden (and yours: key.path=value, as on the command line)
    # (IMPALA stops at 195 here; PPO and A2C at their files' stop values: an untrained greedy policy may pass 195)
    cfg = compile_config(f'cartpole_{algo}.py', ['env.n_evaluator_episode=4']
                         + (['env.stop_value=195'] if algo == 'impala' else []) + list(overrides), seed=seed)
    on_policy = policy_class(cfg).on_policy
    set_global_seed(cfg.seed)
    set_torch_threads(cfg.policy.learn.torch_threads)

    # workers: envs for collection and for evaluation (different seeds), the policy and its three modes
    collector_env = make_env_manager(cfg, 'collector', cfg.env.collector_env_num, cfg.seed)
    evaluator_env = make_env_manager(cfg, 'evaluator', cfg.env.evaluator_env_num, cfg.seed + 100_000)
    policy = create_policy(cfg, collector_env.observation_space, collector_env.action_space)
    collector = SampleCollector(collector_env, policy.collect_mode, cfg.policy.collect.n_sample)
    # the replay buffer policy.other.replay_buffer names (a registered one of your own too; seeded with the run seed)
    buffer = None if on_policy else build_buffer(cfg)
    # the learner hooks the config names (policy.learn.learner.hooks: your own, registered), and two of acframe's
    hooks = [*config_hooks(cfg)['policy.learn.learner.hooks'], LogHook(freq=100, echo=print)]
    if cfg.policy.learn.get('lr_decay_iters'):  # (the pipelines add this hook for the key; PPO's config sets it)
        hooks.append(LinearLRDecayHook(cfg.policy.learn.lr_decay_iters))
    # buffer=: the learner hands a prioritized buffer the priorities of each batch it drew (info['priority'])
    learner = Learner(policy.learn_mode, exp_dir, hooks=hooks, buffer=buffer)
    evaluator = Evaluator(evaluator_env, policy.eval_mode, cfg.env.n_evaluator_episode, cfg.env.stop_value,
                          eval_freq=cfg.policy.eval.evaluator.eval_freq)

    learn = cfg.policy.learn
    result = {'solved': False}
    try:
        # a hook ends the run by raising acframe.StopTraining: the learner records why (stop_requested)
        while collector.env_step < max_env_step and learner.stop_requested is None:
            if evaluator.should_eval(learner.train_iter):
                result = evaluator.evaluate(learner.train_iter, collector.env_step)
                print(f"[eval] env_step {collector.env_step}: return {result['mean']:.1f}")
                learner.after_eval(learner.train_iter, collector.env_step, result['mean'], evaluator.best_return,
                                   result['solved'])                        # the hooks' after_eval (early stops)
                if result['solved']:
                    break
            segment = collector.collect()                                   # (T, B) time-major tree
            if on_policy:
                plan = policy.learn_mode.prepare(policy.collect_mode.get_train_sample(segment))
                learner.train_rollout(plan)                                 # its epochs of minibatches
            else:
                buffer.push(policy.collect_mode.get_train_sample(segment))  # item-major unrolls
                for _ in range(learn.update_per_collect):
                    batch = buffer.sample(learn.batch_size)                 # (unroll_len, batch_size) tree
                    if batch is None:
                        break
                    learner.train(batch)
            learner.end_round()                                             # the hooks' after_round
        if learner.stop_requested is not None:
            print(f"[stop] {learner.stop_requested}")
        if exp_dir is not None:
            learner.save_checkpoint('ckpt_latest.pth')
    finally:
        collector_env.close()
        evaluator_env.close()
    return {'solved': result['solved'], 'env_steps': collector.env_step, 'train_iters': learner.train_iter,
            'best_eval_return': evaluator.best_return, 'stopped_by': learner.stop_requested}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--algo', choices=['impala', 'ppo', 'a2c'], default='impala')
    parser.add_argument('--max-env-step', type=int, default=30_000)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--exp-dir', default=None, help='write the final checkpoint here')
    parser.add_argument('overrides', nargs='*', help="config keys, e.g. policy.other.replay_buffer.type=prioritized "
                                                     "or \"policy.learn.learner.hooks=['my_hook']\" import_names=[...]")
    args = parser.parse_args()
    print(train(args.max_env_step, args.seed, args.exp_dir, args.algo, args.overrides))


if __name__ == '__main__':
    main()
