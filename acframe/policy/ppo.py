"""PPO (Schulman et al. 2017): an on-policy actor-critic that takes many clipped gradient steps per rollout.

Collect: every collector env steps ``T = n_sample / collector_env_num`` times with actions sampled from the
current policy (only the actions are kept: the learner recomputes log π_old with the same weights). The
rollout ``(T, B)`` is trained on, then dropped.

Prepare (once per rollout, with the weights that collected it — ``learn_mode.prepare``): evaluate π_old and
V_old on the rollout's ``T + 1`` observations, then

* scale the rewards by ``reward_scale`` (with ``reward_norm``, divide them by the running std of each collector
  env's discounted return, SB3's ``norm_reward``), fold the time-limit bootstrap ``γ·V(final_obs)`` into the reward of every truncated step
  (``rl_utils.fold_truncation``) and cut the recursion at every episode end,
  ``discounts = γ·(1 − (terminated | truncated))``;
* advantages ``Â_t`` by GAE(λ) (``rl_utils.gae``), value targets ``R_t = Â_t + V_old(s_t)``;
* draw ``epoch_per_collect`` random orders of the ``N = T·B`` transitions.

Learn (``learn_mode.minibatches``): ``epoch_per_collect`` epochs, each a pass over the rollout in minibatches of
``batch_size`` transitions (the last one smaller when ``batch_size`` does not divide N); every minibatch is one
gradient step (one ``Learner.train_iter``) minimising

    L = −L^CLIP(ε) + value_weight · L^V − entropy_weight · H[π]

with ``L^CLIP`` the clipped surrogate (``rl_utils.ppo_policy_loss``, the advantages normalised per minibatch
when ``adv_norm``), ``L^V`` the squared error to ``R_t``, clipped around ``V_old`` when ``value_clip_ratio`` is set
(``rl_utils.ppo_value_loss``), with Adam and the gradient clipped by its global norm. With ``recompute_adv``,
every epoch after the first recomputes ``Â_t``, ``R_t`` and ``V_old`` with the current weights.

Schedules: ``lr_decay_iters`` decays the learning rate and ``clip_ratio_decay_iters`` the clip ratio ε linearly
to 0 at that many gradient steps (SB3/RL-Zoo's ``lin_`` schedules, set to the budget's gradient steps).

Memory (``policy.model.rnn``): prepare unrolls the rollout from the state stored at its first step (the state zeroed
where an episode starts, ``Policy._evaluate_rollout``); each env's ``T`` steps are cut into sequences of ``seq_len``
steps and a minibatch is ``batch_size / seq_len`` whole sequences ``(seq_len, n, ...)``, each recomputed from the state
the actors stored at its first step (docs/recurrent.md).

Actions: Discrete (categorical), Box (diagonal Gaussian with a state-independent log-std, as SB3; the env
manager clips the action to the space's bounds, the loss uses the unclipped sample) and MultiDiscrete (one
categorical per dimension, log-probs summed). Dict observations are flattened by the env layer (``env.obs_keys``).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterator, List

import torch

from ..data import flatten_lead, make_tree, ttorch
from ..data.tree import is_leaf, tree_map
from ..config.compile import recurrent_model
from ..errors import ConfigError
from ..models import RewardNormalizer
from ..registry import POLICY_REGISTRY
from ..rl_utils import gae, ppo_policy_loss, ppo_value_loss
from .base import LearnNeed, Policy, build_optimizer


@POLICY_REGISTRY.register('ppo')
class PPOPolicy(Policy):
    """PPO-clip with GAE(λ), for discrete, continuous and multi-discrete actions."""

    supported_action_spaces = ('discrete', 'continuous', 'multi_discrete')
    on_policy = True
    collect_stats = False
    supports_rnn = True

    config = dict(
        # (dict) Keyword arguments of the model (VAC: encoder_hidden_size_list, activation, obs_norm, ...; free-form but for rnn); obs_shape, action_shape and action_space are filled from the env when absent.
        model=dict(
            # (dict) A recurrent core (LSTM/GRU); minibatches are whole sequences recomputed from their stored start states.
            rnn=dict(
                # (str in {'lstm', 'gru'} or None) Recurrent core between the encoder and the heads, one hidden state per env carried across steps and reset where an episode starts (docs/recurrent.md); None: feed-forward.
                type=None,
                # (int in [1, 4096]) Units of each recurrent layer (the heads read its output).
                hidden_size=64,
                # (int in [1, 16]) Stacked recurrent layers.
                num_layers=1,
                # (bool) A LayerNorm (learned scale and shift) on the core's input, the encoder's features at each step, so their scale cannot drift (docs/recurrent.md).
                input_norm=False,
                # (int >= 0) Steps of one training sequence: each env's T rollout steps are cut into T / seq_len sequences, each recomputed from the state stored at its first step (a divisor of T, and batch_size a multiple of it); 0: whole rollout columns (T steps).
                seq_len=0,
            ),
        ),
        # (bool) Recompute the advantages and value targets with the current weights before every epoch after the first.
        recompute_adv=False,
        learn=dict(
            # (int >= 1) Passes (epochs) over each rollout.
            epoch_per_collect=10,
            # (int >= 1) Transitions per minibatch; each minibatch is one gradient step (one learner iteration).
            batch_size=64,
            # (str in {'adam', 'rmsprop', 'rmsprop_tf'}) Optimizer: 'adam' (PPO's usual choice), 'rmsprop' or 'rmsprop_tf' (TensorFlow's RMSprop).
            optim='adam',
            # (float > 0) Step size of the optimizer.
            learning_rate=0.0003,
            # (float > 0) Adam epsilon (1e-5 as SB3's and the baselines' PPO).
            adam_eps=0.00001,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float in [0, 1]) GAE's lambda (bias-variance trade-off of the advantages; 1 is the Monte-Carlo advantage).
            gae_lambda=0.95,
            # (float > 0) Rewards are multiplied by this before the targets are computed (e.g. 0.1 for Pendulum's -16..0 rewards).
            reward_scale=1.0,
            # (bool) Divide rewards by the running std of the discounted return of each collector env (SB3 VecNormalize's norm_reward); the statistics are learn state, saved in checkpoints.
            reward_norm=False,
            # (float > 0) Normalized rewards (reward_norm) are clipped to [-reward_norm_clip, reward_norm_clip].
            reward_norm_clip=10.0,
            # (float > 0) Clip range epsilon of the probability ratio in the surrogate objective.
            clip_ratio=0.2,
            # (float > 0 or None) Clip the value around the value of the collecting weights by +-this (value units); None: no value clipping.
            value_clip_ratio=None,
            # (float >= 0) Weight of the value loss (the policy loss has weight 1).
            value_weight=0.5,
            # (float >= 0) Weight of the entropy bonus.
            entropy_weight=0.0,
            # (bool) Normalise the advantages of each minibatch to zero mean and unit std.
            adv_norm=True,
            # (str in {'clip_norm', 'clip_value', 'none'} or None) Gradient clipping: 'clip_norm' (global norm), 'clip_value' (elementwise) or 'none'.
            grad_clip_type='clip_norm',
            # (float >= 0) The norm (clip_norm) or absolute value (clip_value) gradients are clipped to (DI-engine's name).
            grad_clip_value=0.5,
            # (int >= 0) Decay the learning rate linearly to 0 at this learner iteration (gradient step); 0 keeps it constant.
            lr_decay_iters=0,
            # (int >= 0) Decay the clip ratio linearly to 0 at this learner iteration (gradient step); 0 keeps it constant.
            clip_ratio_decay_iters=0,
        ),
        collect=dict(
            # (int > 0) Transitions per rollout across all collector envs (a multiple of env.collector_env_num; as in DI-engine): each env steps T = n_sample / collector_env_num times.
            n_sample=1024,
            # (int >= 1) gSDE (policy.model.use_sde): env steps between two draws of each collector env's exploration matrix (SB3's sde_sample_freq).
            sde_sample_freq=4,
        ),
        eval=dict(
            # (bool) Evaluate with the most likely action (True) or with actions sampled from the policy (False).
            deterministic=True,
        ),
        other=dict(
            replay_buffer=dict(
                # (str) On-policy: no replay buffer (''); a buffer type that replays data is refused.
                type='',
            ),
        ),
    )

    @classmethod
    def learn_needs(cls, cfg: Any) -> List[LearnNeed]:
        """A minibatch larger than a rollout would silently be the whole rollout: refused."""
        size = cfg.learn.batch_size
        if isinstance(size, bool) or not isinstance(size, int):
            return []
        return [LearnNeed(size, 'rollout',
                          f"policy.learn.batch_size={size} (transitions per minibatch) needs a rollout of at least",
                          'minibatches of that size (each would be the whole rollout)',
                          'lower policy.learn.batch_size or raise policy.collect.n_sample')]

    @classmethod
    def check_run_config(cls, cfg: Any) -> None:
        """A recurrent PPO's sequences must tile the rollout (``seq_len`` divides ``T``) and its minibatches hold whole
        sequences (``batch_size`` a multiple of the sequence length)."""
        super().check_run_config(cfg)
        if not recurrent_model(cfg.policy):
            return
        steps = int(cfg.policy.collect.n_sample) // int(cfg.env.collector_env_num)
        length = cls.batch_unit(cfg)
        if steps % length:
            raise ConfigError(f"policy.model.rnn.seq_len={length} does not divide the {steps} steps each env collects per "
                              f"rollout (policy.collect.n_sample / env.collector_env_num); choose a divisor of {steps} "
                              f"or 0 (whole rollouts)")
        batch = int(cfg.policy.learn.batch_size)
        if batch % length:
            # (the sequence lengths that would fit both: divisors of the steps per env that divide batch_size too)
            fits = [n for n in range(min(batch, steps), 1, -1) if steps % n == 0 and batch % n == 0][:1]
            shorter = (f", or policy.model.rnn.seq_len={fits[0]} (it divides both)" if fits else '')
            raise ConfigError(f"policy.learn.batch_size={batch} is not a multiple of the sequence length {length} "
                              f"(policy.model.rnn.seq_len, or the steps per env of a rollout when 0): minibatches hold "
                              f"whole sequences; set batch_size to a multiple of {length}{shorter}")

    @classmethod
    def batch_unit(cls, cfg: Any) -> int:
        """A recurrent PPO's minibatches hold whole sequences: ``rnn.seq_len`` steps (0: a rollout's steps per env)."""
        if not recurrent_model(cfg.policy):
            return 1
        rnn = cfg.policy.model.get('rnn') or {}
        return int(rnn.get('seq_len') or int(cfg.policy.collect.n_sample) // int(cfg.env.collector_env_num))

    def _seq_len(self, steps: int) -> int:
        """Steps of a training sequence in a rollout of ``steps`` steps per env: ``rnn.seq_len`` (0: ``steps``). A
        rollout it does not tile (the last, cut rollout of a budget) is learned in whole columns."""
        length = int(self._cfg.model.rnn.get('seq_len') or steps)
        return length if steps % length == 0 else steps

    # ---- learn -------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn  # its values were checked by compile_config against the declarations in config
        self._optimizer = build_optimizer(self._model.parameters(), learn)
        self._params = list(self._model.parameters())
        self._reward_normalizer = (RewardNormalizer(float(learn.discount_factor), learn.reward_norm_clip)
                                   if learn.reward_norm else None)
        self._grad_steps = 0  # gradient steps taken (the clip-ratio schedule's clock; saved in checkpoints)

    def _clip_ratio(self) -> float:
        """ε of the next gradient step: ``clip_ratio``, decayed linearly to 0 at ``clip_ratio_decay_iters``."""
        learn = self._cfg.learn
        if not learn.clip_ratio_decay_iters:
            return float(learn.clip_ratio)
        return float(learn.clip_ratio) * max(0.0, 1.0 - self._grad_steps / learn.clip_ratio_decay_iters)

    def _prepare_rollout(self, rollout: ttorch.Tensor) -> ttorch.Tensor:
        """The plan of one rollout: the rollout, ``log π_old``, ``V_old``, ``Â_t``, ``R_t`` (``(T, B)`` each) and the
        epochs' random orders of its ``T·B`` transitions (``(epoch_per_collect, T·B)``; with a recurrent model, of its
        ``T / seq_len · B`` sequences)."""
        steps, num_envs = rollout.reward.shape
        # the observation statistics stay those the rollout was collected with until its last gradient step
        # (``_minibatches``): log π_old is then the behaviour policy's, and every epoch sees the same inputs
        with torch.no_grad():
            # (T+1, B, ...); recurrent: from the stored first state, with the fragment-end states only where a
            # truncated episode's final observation is valued from them
            output = self._evaluate_rollout(rollout, ends=bool(rollout.truncated.any()))
            log_prob_old = self._distribution(output, drop_last=True).log_prob(rollout.action)
            reward = self._scaled_reward(rollout.reward)
            if self._reward_normalizer is not None:  # once per rollout: recompute_adv reuses these rewards
                reward = self._reward_normalizer(reward, rollout.terminated | rollout.truncated)
        keys = ('obs', 'action', 'terminated', 'truncated', 'final_obs')
        # a recurrent model's minibatches are sequences: the plan orders sequences, not transitions
        units = steps * num_envs
        if self._recurrent:
            keys += ('rnn_state', 'episode_start')
            units = steps // self._seq_len(steps) * num_envs
        plan = {
            'rollout': {k: rollout[k] for k in keys},
            'reward': reward,
            'log_prob_old': log_prob_old,
            'value_old': reward.new_empty(steps, num_envs),  # on the learner's device, as the rollout
            'advantage': reward.new_empty(steps, num_envs),
            'value_target': reward.new_empty(steps, num_envs),
            'order': torch.stack([torch.randperm(units) for _ in range(self._cfg.learn.epoch_per_collect)]),
        }
        self._fill_targets(plan, output)
        return make_tree(plan)

    def _fill_targets(self, plan: Any, output: Dict[str, torch.Tensor]) -> None:
        """Write ``V_old``, the GAE advantages and the value targets of ``output['value']`` ``(T+1, B)`` into the plan
        (a recurrent model values truncated episodes' final observations from ``output['ends']``)."""
        rollout = plan['rollout']
        values, ends = output['value'], output.get('ends')
        with torch.no_grad():
            discounts = self._discounts(rollout['terminated'], rollout['truncated'])
            rewards = self._bootstrap_truncation(plan['reward'], rollout['truncated'], rollout['final_obs'],
                                                 None if ends is None else ends[:-1])
            advantages = gae(rewards, values[:-1], values[-1], discounts, float(self._cfg.learn.gae_lambda))
            plan['value_old'].copy_(values[:-1])
            plan['advantage'].copy_(advantages)
            plan['value_target'].copy_(advantages + values[:-1])

    def _minibatches(self, plan: ttorch.Tensor, start: int = 0) -> Iterator[ttorch.Tensor]:
        """``epoch_per_collect`` passes over the rollout in the plan's orders, ``batch_size`` transitions a step."""
        if self._recurrent:
            yield from self._sequence_minibatches(plan, start)
            return
        learn = self._cfg.learn
        rollout = plan.rollout
        steps, num_envs = plan.reward.shape
        total = steps * num_envs
        per_epoch = math.ceil(total / learn.batch_size)

        def flat(x: torch.Tensor) -> torch.Tensor:  # (T, B, ...) -> (T*B, ...)
            return x.reshape((total,) + tuple(x.shape[2:]))

        for step in range(start, int(plan.order.shape[0]) * per_epoch):
            epoch, index = divmod(step, per_epoch)
            if index == 0 and epoch > 0 and self._cfg.recompute_adv:
                with torch.no_grad():
                    self._fill_targets(plan, self._evaluate(rollout.obs))
            idx = plan.order[epoch, index * learn.batch_size:(index + 1) * learn.batch_size]
            yield make_tree({
                'obs': flatten_lead(rollout.obs[:-1], 2)[idx],  # (per key for a Dict observation)
                'action': flat(rollout.action)[idx],
                'log_prob_old': flat(plan.log_prob_old)[idx],
                'value_old': flat(plan.value_old)[idx],
                'advantage': flat(plan.advantage)[idx],
                'value_target': flat(plan.value_target)[idx],
            })
        # the rollout is learned: its observations join the statistics the next rollout is collected with. Here,
        # not in prepare: statistics moved before log π_old would make π_old differ from the policy that acted (with
        # a small σ, a shift of the inputs is a shift of μ by several σ: huge ratios, clipped or exploding steps)
        self._update_obs_norm(rollout.obs)

    def _sequence_minibatches(self, plan: ttorch.Tensor, start: int = 0) -> Iterator[ttorch.Tensor]:
        """``_minibatches`` of a recurrent model: each env's ``T`` steps are cut into sequences of ``L = seq_len``
        steps (sequence ``k·B + b`` is steps ``[kL, (k+1)L)`` of env ``b``); a minibatch is ``batch_size / L`` whole
        sequences in the plan's order, time-major ``(L, n, ...)``, with each sequence's stored start state
        ``rnn_state`` ``(n, R, H)`` and its episode starts ``(L, n)`` (the first row False: the stored state is already
        zeroed where an episode starts there)."""
        learn = self._cfg.learn
        rollout = plan.rollout
        steps, num_envs = plan.reward.shape
        length = self._seq_len(steps)
        chunks = steps // length
        per_batch = max(1, learn.batch_size // length)
        per_epoch = math.ceil(chunks * num_envs / per_batch)

        def seqs(x: torch.Tensor) -> torch.Tensor:  # (T, B, ...) -> (L, chunks*B, ...)
            rest = tuple(x.shape[2:])
            return x.reshape((chunks, length, num_envs) + rest).transpose(0, 1).reshape((length, chunks * num_envs) + rest)

        first_states = rollout.rnn_state[::length].reshape((chunks * num_envs,) + tuple(rollout.rnn_state.shape[2:]))
        for step in range(start, int(plan.order.shape[0]) * per_epoch):
            epoch, index = divmod(step, per_epoch)
            if index == 0 and epoch > 0 and self._cfg.recompute_adv:
                with torch.no_grad():
                    self._fill_targets(plan, self._evaluate_rollout(rollout, ends=bool(rollout.truncated.any())))
            idx = plan.order[epoch, index * per_batch:(index + 1) * per_batch]
            starts = seqs(rollout.episode_start)[:, idx].clone()
            starts[0] = False
            obs = rollout.obs[:-1]
            yield make_tree({
                'obs': seqs(obs)[:, idx] if is_leaf(obs) else tree_map(lambda x: seqs(x)[:, idx], obs),
                'action': seqs(rollout.action)[:, idx],
                'log_prob_old': seqs(plan.log_prob_old)[:, idx],
                'value_old': seqs(plan.value_old)[:, idx],
                'advantage': seqs(plan.advantage)[:, idx],
                'value_target': seqs(plan.value_target)[:, idx],
                'rnn_state': first_states[idx],
                'episode_start': starts,
            })
        self._update_obs_norm(rollout.obs)

    def _batch_samples(self, batch: ttorch.Tensor) -> int:
        return int(batch.advantage.numel())

    def _forward_learn(self, batch: ttorch.Tensor) -> Dict[str, float]:
        """One gradient step on one minibatch of transitions."""
        learn = self._cfg.learn
        if self._recurrent:  # whole sequences (L, n, ...) from their stored start states; no fragment-end states
            output = self._evaluate_unroll(batch.obs, batch.rnn_state, batch.episode_start, ends=False)
        else:
            output = self._evaluate(batch.obs, 1)  # (N, ...)
        values = output['value']
        dist = self._distribution(output)
        log_prob = dist.log_prob(batch.action)
        advantages = batch.advantage
        if learn.adv_norm:
            advantages = self._normalize_advantages(advantages)
        clip_ratio = self._clip_ratio()
        policy = ppo_policy_loss(log_prob, batch.log_prob_old, advantages, clip_ratio)
        value_loss = ppo_value_loss(values, batch.value_old, batch.value_target, learn.value_clip_ratio)
        entropy = dist.entropy().mean()
        total_loss = policy.loss + learn.value_weight * value_loss
        if learn.entropy_weight:  # (without a bonus, the entropy is only reported: no backward through it)
            total_loss = total_loss - learn.entropy_weight * entropy

        info = self._learn_step(total_loss, policy_loss=policy.loss, value_loss=value_loss, entropy=entropy,
                                approx_kl=policy.approx_kl, clip_fraction=policy.clip_fraction, clip_ratio=clip_ratio,
                                value=values.mean())
        self._grad_steps += 1
        return info

    def _monitor_vars_learn(self) -> List[str]:
        return super()._monitor_vars_learn() + ['policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction',
                                                'clip_ratio', 'grad_norm', 'value']

    def _learn_statistics(self) -> Dict[str, Any]:
        return {'reward_normalizer': self._reward_normalizer}

    def _state_dict_learn(self) -> Dict[str, Any]:
        return {**super()._state_dict_learn(), 'grad_steps': self._grad_steps}

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        self._grad_steps = int(state.get('grad_steps', 0))

    # ---- collect / eval: Policy's defaults (an action sampled from π; its mode, or a sample, in eval) ----
