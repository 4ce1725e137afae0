"""A2C (Mnih et al. 2016, the synchronous form of A3C): an on-policy actor-critic.

Collect: every collector env steps ``T = n_sample / collector_env_num`` times (``n_sample`` counts transitions
across all envs, as in DI-engine) with actions sampled from the current policy; the time-major segment
``(T, B)`` is trained on once, then dropped.

Learn: evaluate π and V on the segment's ``T + 1`` observations with the current weights (the same weights
that collected it), then

* fold the time-limit bootstrap ``γ·V(final_obs)`` into the reward of every truncated step
  (``rl_utils.fold_truncation``) and cut the recursion at every episode end,
  ``discounts = γ·(1 − (terminated | truncated))``;
* returns ``R_t``: with ``gae_lambda = 1`` the n-step return bootstrapped from ``V(x_T)`` at the segment end
  (``rl_utils.nstep_return``, the A3C form), else the λ-return of GAE(λ) (``rl_utils.gae``);
  advantages ``A_t = R_t − V(x_t)``, optionally normalised over the batch;
* with ``model.obs_norm`` the segment is learned with the observation statistics it was collected with, and its
  observations join them after the gradient step (the learn mode owns them; collect/eval modes and parallel
  actors only apply them); with
  ``learn.reward_norm`` rewards are divided by the running std of each collector env's discounted return;
* minimise

      L = −Σ log π(a_t|x_t)·A_t − entropy_weight·Σ H[π(·|x_t)] + value_weight·Σ (R_t − V(x_t))²

  where Σ is the mean (or the sum, ``loss_reduction='sum'``) over the T·B steps, with RMSprop or Adam,
  the gradient clipped by its global norm.

Memory (``policy.model.rnn``): π and V are recomputed over the segment from the state stored at its first step,
the state zeroed where an episode starts inside it (``Policy._evaluate_rollout``; docs/recurrent.md).

Actions: Discrete (categorical), Box (diagonal Gaussian: the env manager clips the action to the space's
bounds, the loss uses the unclipped sample) and MultiDiscrete (one categorical per dimension, log-probs
summed). Dict observations are flattened by the env layer (``env.obs_keys``).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from ..data import ttorch
from ..models import RewardNormalizer
from ..registry import POLICY_REGISTRY
from ..rl_utils import gae, nstep_return
from .base import Policy, actor_critic_groups, build_optimizer


@POLICY_REGISTRY.register('a2c')
class A2CPolicy(Policy):
    """A2C with n-step or GAE(λ) returns, for discrete, continuous and multi-discrete actions."""

    supported_action_spaces = ('discrete', 'continuous', 'multi_discrete')
    on_policy = True
    async_training = True  # A3C: -m async runs it in Hogwild workers on one shared model
    collect_stats = False
    supports_rnn = True

    config = dict(
        # (dict) Keyword arguments of the model (VAC: encoder_hidden_size_list, activation, obs_norm, ...; free-form but for rnn); obs_shape, action_shape and action_space are filled from the env when absent.
        model=dict(
            # (dict) A recurrent core (LSTM/GRU); the learner recomputes each rollout from the state stored at its first step.
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
        ),
        learn=dict(
            # (str in {'rmsprop', 'rmsprop_tf', 'adam'}) Optimizer: 'rmsprop' (A2C's usual choice), 'rmsprop_tf' (TensorFlow's RMSprop, the RL Zoo's Atari A2C) or 'adam'.
            optim='rmsprop',
            # (float > 0) Step size of the optimizer (of the actor only when critic_learning_rate is set).
            learning_rate=0.0007,
            # (float > 0 or None) Step size of the critic when it differs from the actor's; None uses learning_rate (needs model.share_encoder=False).
            critic_learning_rate=None,
            # (float in [0, 1]) RMSprop smoothing constant alpha (decay of the squared-gradient average).
            rms_alpha=0.99,
            # (float > 0) RMSprop epsilon, added to the root of the squared-gradient average ('rmsprop_tf': under the root).
            rms_eps=0.00001,
            # (float > 0) Adam epsilon.
            adam_eps=0.00000001,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float in [0, 1]) GAE's lambda: 1.0 gives n-step returns bootstrapped at the segment end (A3C/A2C), less gives GAE(lambda).
            gae_lambda=1.0,
            # (float > 0) Rewards are multiplied by this before the targets are computed (e.g. 0.1 for Pendulum's -16..0 rewards).
            reward_scale=1.0,
            # (bool) Divide rewards by the running std of the discounted return of each collector env (SB3 VecNormalize's norm_reward); the statistics are learn state, saved in checkpoints.
            reward_norm=False,
            # (float > 0) Normalized rewards (reward_norm) are clipped to [-reward_norm_clip, reward_norm_clip].
            reward_norm_clip=10.0,
            # (float >= 0) Weight of the value loss (the policy loss has weight 1).
            value_weight=0.5,
            # (float >= 0) Weight of the entropy bonus.
            entropy_weight=0.01,
            # (bool) Normalise the advantages of each batch to zero mean and unit std.
            adv_norm=False,
            # (str in {'mean', 'sum'}) How each loss term reduces over the T x B steps of a batch: 'mean' or 'sum'.
            loss_reduction='mean',
            # (str in {'clip_norm', 'clip_value', 'none'} or None) Gradient clipping: 'clip_norm' (global norm), 'clip_value' (elementwise) or 'none'.
            grad_clip_type='clip_norm',
            # (float >= 0) The norm (clip_norm) or absolute value (clip_value) gradients are clipped to (DI-engine's name; formerly clip_value, still read with a warning).
            grad_clip_value=0.5,
            # (int >= 0) Decay the learning rates linearly to 0 at this learner iteration; 0 keeps them constant.
            lr_decay_iters=0,
        ),
        collect=dict(
            # (int > 0) Transitions collected per update across all collector envs, and the batch of its one gradient step (A2C has no batch_size: the batch is the whole rollout) (a multiple of env.collector_env_num; as in DI-engine): each env steps T = n_sample / collector_env_num times, the n of the n-step returns.
            n_sample=40,
            # (int >= 1) gSDE (policy.model.use_sde): env steps between two draws of each collector env's exploration matrix (SB3's sde_sample_freq).
            sde_sample_freq=4,
        ),
        other=dict(
            replay_buffer=dict(
                # (str) On-policy: no replay buffer (''); a buffer type that replays data is refused.
                type='',
            ),
        ),
    )

    # ---- learn -------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn  # its values were checked by compile_config against the declarations in config
        critic_lr = learn.critic_learning_rate
        params: Any = self._model.parameters() if critic_lr is None else actor_critic_groups(self._model, float(critic_lr))
        self._optimizer = build_optimizer(params, learn)
        self._gamma = float(learn.discount_factor)
        self._params = list(self._model.parameters())
        self._reward_normalizer = RewardNormalizer(self._gamma, learn.reward_norm_clip) if learn.reward_norm else None

    def _forward_learn(self, batch: ttorch.Tensor) -> Dict[str, float]:
        learn = self._cfg.learn
        # (T+1, B, ...), with the observation statistics it was collected with; a recurrent model (policy.model.rnn)
        # recomputes the sequence from the state stored at the segment's first step
        output = self._evaluate_rollout(batch)
        values = output['value']
        dist = self._distribution(output, drop_last=True)

        returns, advantages = self._targets(batch, values.detach(), output.get('ends'))
        if learn.adv_norm:
            advantages = self._normalize_advantages(advantages)
        reduce = torch.mean if learn.loss_reduction == 'mean' else torch.sum
        policy_loss = -reduce(dist.log_prob(batch.action) * advantages)
        value_loss = reduce((returns - values[:-1]).pow(2))
        entropy = reduce(dist.entropy())
        total_loss = policy_loss + learn.value_weight * value_loss - learn.entropy_weight * entropy

        info = self._learn_step(total_loss, policy_loss=policy_loss, value_loss=value_loss, entropy=entropy,
                                advantage=advantages.mean(), value=values[:-1].mean())
        self._update_obs_norm(batch.obs)  # after the step, as PPO: the gradient is the acting policy's
        if len(self._optimizer.param_groups) > 1:
            info['critic_lr'] = self._optimizer.param_groups[1]['lr']
        return info

    def _targets(self, batch: ttorch.Tensor, values: torch.Tensor,
                 ends: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(returns R_t, advantages A_t)``, both ``(T, B)`` without gradient; ``values`` is ``(T+1, B)``; ``ends``
        the recurrent states a truncated episode's final observation is valued from (recurrent models only).

        ``values[-1]`` = V(x_T) bootstraps the segment end; a step that ended its episode has discount 0
        (the next entry is already a new episode), and a truncated one has γ·V(final_obs) folded into its reward.
        """
        with torch.no_grad():
            discounts = self._discounts(batch.terminated, batch.truncated)
            reward = self._scaled_reward(batch.reward)
            if self._reward_normalizer is not None:
                reward = self._reward_normalizer(reward, batch.terminated | batch.truncated)
            rewards = self._bootstrap_truncation(reward, batch.truncated, batch.final_obs,
                                                 None if ends is None else ends[:-1].detach())
            lambda_ = float(self._cfg.learn.gae_lambda)
            if lambda_ == 1.0:
                returns = nstep_return(rewards, discounts, values[-1])
                advantages = returns - values[:-1]
            else:
                advantages = gae(rewards, values[:-1], values[-1], discounts, lambda_)
                returns = advantages + values[:-1]
        return returns, advantages

    def _learn_statistics(self) -> Dict[str, Any]:
        return {'reward_normalizer': self._reward_normalizer}

    def _monitor_vars_learn(self) -> List[str]:
        extra = ['critic_lr'] if self._cfg.learn.critic_learning_rate is not None else []
        return super()._monitor_vars_learn() + ['policy_loss', 'value_loss', 'entropy', 'grad_norm', 'advantage',
                                                'value'] + extra

    # ---- collect / eval: Policy's defaults (an action sampled from π; its mode, or a sample, in eval) ----
    def _get_train_sample(self, segment: ttorch.Tensor) -> ttorch.Tensor:
        """The whole time-major segment is one batch: A2C trains on it once."""
        return segment
