"""Register your own policy and train it with acframe's serial pipeline.

``MyPGPolicy`` is a vanilla advantage actor-critic: n-step returns as the critic's target, the advantage
``R_t - V(x_t)`` weighting ``log pi(a_t|x_t)``, an entropy bonus. It plugs into the off-policy serial
pipeline with a replay buffer of ``max_use=1``, so every collected step is trained on exactly once, right
after it was collected with the current weights.

    python examples/custom_policy.py [--max-env-step 20000] [--seed 0] [--exp-dir DIR]
"""
from __future__ import annotations

import argparse
from typing import Dict

import torch

from acframe import POLICY_REGISTRY, serial_pipeline
from acframe.data import split_segment
from acframe.models import make_distribution
from acframe.policy import Policy
from acframe.rl_utils import fold_truncation, nstep_return


@POLICY_REGISTRY.register('my_pg')
class MyPGPolicy(Policy):
    """Advantage actor-critic with n-step returns, for discrete actions."""

    supported_action_spaces = ('discrete',)

    # every default with its rule and one-line doc in the comment above it; compile_config checks users' values against the rules
    config = dict(
        learn=dict(
            # (int >= 1) Learner iterations after each collection.
            update_per_collect=1,
            # (int >= 1) Env trajectories (columns of a segment) per training batch.
            batch_size=8,
            # (float > 0) Adam step size.
            learning_rate=0.005,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float >= 0) Weight of the value loss.
            value_weight=0.5,
            # (float >= 0) Weight of the entropy bonus.
            entropy_weight=0.01,
        ),
        collect=dict(
            # (int >= 1) Transitions collected per collection across all collector envs (a multiple of collector_env_num).
            n_sample=64,
        ),
        other=dict(
            replay_buffer=dict(
                # (int >= 1) Capacity in trajectories.
                replay_buffer_size=64,
                # (int >= 1) Train on every trajectory exactly once.
                max_use=1,
            ),
        ),
    )

    def _init_learn(self) -> None:
        self._optimizer = torch.optim.Adam(self._model.parameters(), lr=self._cfg.learn.learning_rate)
        self._gamma = self._cfg.learn.discount_factor

    def _forward_learn(self, batch) -> Dict[str, float]:
        learn = self._cfg.learn
        steps, width = batch.reward.shape
        # the model on (T+1, B, ...) observations; _evaluate passes a Dict observation on and masks the logits of
        # illegal actions where the env gives an action mask (calling self._model directly does neither)
        out = self._evaluate(batch.obs)
        values = out['value']                                              # (T+1, B)
        dist = make_distribution({'logit': out['logit'][:-1]}, 'discrete')
        with torch.no_grad():
            # the acframe convention: a finished episode (terminated or truncated) stops the recursion, and a
            # truncated step gets gamma * V(final_obs) folded into its reward
            discounts = self._gamma * (~(batch.terminated | batch.truncated)).float()
            final_values = self._evaluate(batch.final_obs)['value']
            rewards = fold_truncation(batch.reward, batch.truncated, final_values, self._gamma)
            returns = nstep_return(rewards, discounts, values[-1].detach())
        advantages = returns - values[:-1].detach()
        policy_loss = -(dist.log_prob(batch.action) * advantages).mean()
        value_loss = (returns - values[:-1]).pow(2).mean()
        entropy = dist.entropy().mean()
        loss = policy_loss + learn.value_weight * value_loss - learn.entropy_weight * entropy
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return {'cur_lr': learn.learning_rate, 'total_loss': loss.item(), 'policy_loss': policy_loss.item(),
                'value_loss': value_loss.item(), 'entropy': entropy.item()}

    def _forward_collect(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        logit = self._compute_actor(obs)['logit']                           # (masked, where the env gives a mask)
        return {'action': make_distribution({'logit': logit}, 'discrete').sample()}

    def _get_train_sample(self, segment):
        # one whole segment column per trajectory: (T, B, ...) -> B items of (T(+1), ...) for the buffer
        return split_segment(segment, int(segment.reward.shape[0]))

    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {'action': self._compute_actor(obs)['logit'].argmax(-1)}


main_config = dict(
    exp_name='cartpole_my_pg',
    env=dict(env_id='CartPole-v1', collector_env_num=8, evaluator_env_num=4, n_evaluator_episode=4, stop_value=195),
    policy=dict(eval=dict(evaluator=dict(eval_freq=100))),
    max_env_step=20_000,
)
create_config = dict(env=dict(type='gym'), env_manager=dict(type='sync'), policy=dict(type='my_pg'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--max-env-step', type=int, default=None)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--exp-dir', default=None)
    args = parser.parse_args()
    policy = serial_pipeline((main_config, create_config), seed=args.seed, max_env_step=args.max_env_step,
                             exp_dir=args.exp_dir)
    print(f"my_pg: {policy.summary['env_steps']} env steps, best eval return {policy.summary['best_eval_return']}")


if __name__ == '__main__':
    main()
