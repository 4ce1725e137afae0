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

    python examples/compose_pipeline.py [--algo impala|ppo] [--max-env-step 30000] [--seed 0] [--exp-dir DIR]
"""
from __future__ import annotations

import argparse

from acframe.config import compile_config
from acframe.data import ReplayBuffer
from acframe.envs import make_env_manager
from acframe.policy import create_policy, policy_class
from acframe.utils import set_global_seed, set_torch_threads
from acframe.worker import Evaluator, Learner, LinearLRDecayHook, LogHook, SampleCollector


def train(max_env_step: int, seed: int, exp_dir: str = None, algo: str = 'impala') -> dict:
    # the same config file the CLI uses, with a few keys overridden
    # (IMPALA stops at 195 here; PPO and A2C at their files' stop values: an untrained greedy policy may pass 195)
    cfg = compile_config(f'cartpole_{algo}.py', ['env.n_evaluator_episode=4']
                         + (['env.stop_value=195'] if algo == 'impala' else []), seed=seed)
    on_policy = policy_class(cfg).on_policy
    set_global_seed(cfg.seed)
    set_torch_threads(cfg.policy.learn.torch_threads)

    # workers: envs for collection and for evaluation (different seeds), the policy and its three modes
    collector_env = make_env_manager(cfg, 'collector', cfg.env.collector_env_num, cfg.seed)
    evaluator_env = make_env_manager(cfg, 'evaluator', cfg.env.evaluator_env_num, cfg.seed + 100_000)
    policy = create_policy(cfg, collector_env.observation_space, collector_env.action_space)
    collector = SampleCollector(collector_env, policy.collect_mode, cfg.policy.collect.n_sample)
    buffer = None
    if not on_policy:
        buffer_cfg = cfg.policy.other.replay_buffer
        buffer = ReplayBuffer(buffer_cfg.replay_buffer_size, buffer_cfg.max_use, seed=cfg.seed)
    hooks = [LogHook(freq=100, echo=print)]
    if cfg.policy.learn.get('lr_decay_iters'):  # (the pipelines add this hook for the key; PPO's config sets it)
        hooks.append(LinearLRDecayHook(cfg.policy.learn.lr_decay_iters))
    learner = Learner(policy.learn_mode, exp_dir, hooks=hooks)
    evaluator = Evaluator(evaluator_env, policy.eval_mode, cfg.env.n_evaluator_episode, cfg.env.stop_value,
                          eval_freq=cfg.policy.eval.evaluator.eval_freq)

    learn = cfg.policy.learn
    result = {'solved': False}
    try:
        while collector.env_step < max_env_step:
            if evaluator.should_eval(learner.train_iter):
                result = evaluator.evaluate(learner.train_iter, collector.env_step)
                print(f"[eval] env_step {collector.env_step}: return {result['mean']:.1f}")
                if result['solved']:
                    break
            segment = collector.collect()                                   # (T, B) time-major tree
            if on_policy:
                plan = policy.learn_mode.prepare(policy.collect_mode.get_train_sample(segment))
                learner.train_rollout(plan)                                 # its epochs of minibatches
                continue
            buffer.push(policy.collect_mode.get_train_sample(segment))      # item-major unrolls
            for _ in range(learn.update_per_collect):
                batch = buffer.sample(learn.batch_size)                     # (unroll_len, batch_size) tree
                if batch is None:
                    break
                learner.train(batch)
        if exp_dir is not None:
            learner.save_checkpoint('ckpt_latest.pth')
    finally:
        collector_env.close()
        evaluator_env.close()
    return {'solved': result['solved'], 'env_steps': collector.env_step, 'train_iters': learner.train_iter,
            'best_eval_return': evaluator.best_return}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--algo', choices=['impala', 'ppo', 'a2c'], default='impala')
    parser.add_argument('--max-env-step', type=int, default=30_000)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--exp-dir', default=None, help='write the final checkpoint here')
    args = parser.parse_args()
    print(train(args.max_env_step, args.seed, args.exp_dir, args.algo))


if __name__ == '__main__':
    main()
