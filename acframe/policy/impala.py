"""IMPALA (Espeholt et al. 2018): an actor-critic that learns off-policy with V-trace targets.

Collect: sample actions from the current policy, keep its distribution statistics (the behaviour policy μ).
Learn: on a replayed batch of unrolls (T, B), evaluate π and V with the current weights,
``log ρ_t = log π(a_t|x_t) − log μ(a_t|x_t)``, compute the V-trace targets ``v_s`` and policy-gradient
advantages (normalised per batch with ``learn.adv_norm``), and minimise

    L = −Σ log π(a_t|x_t) · A^pg_t + value_weight · Σ (v_s − V(x_s))² − entropy_weight · Σ H[π(·|x_t)],

where Σ is the mean over the T·B steps, or their sum with ``learn.loss_reduction='sum'`` — the IMPALA paper's
losses are sums, so its RMSprop epsilon (0.01) and gradient-norm clip (40) assume sums: on mean losses, whose
gradients are T·B times smaller, that epsilon dwarfs the root of the squared-gradient average and the steps shrink.

Prioritized replay (``replay_buffer.type='prioritized'``, docs/replay.md): each unroll's three terms are multiplied by
its importance-sampling weight ``w_b`` before Σ, and the unroll's new priority is ``mean_s |v_s − V(x_s)|``.

A time-limit truncation is bootstrapped from V(final_obs) evaluated with the current weights
(``rl_utils.fold_truncation``); a termination has discount 0.

Memory (``policy.model.rnn``): as the IMPALA paper's LSTM agent, each replayed unroll carries the actor's state at
its first step (``rnn_state`` ``(1, B, R, H)`` in a batch) and its episode starts (``episode_start`` ``(T, B)``); the
learner recomputes π and V over the unroll's ``T + 1`` observations from that state with the current weights, the
state zeroed before every step that starts an episode (``Policy._evaluate_rollout``). V-trace on top is unchanged.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from ..data import make_tree, split_segment, to_dict, ttorch
from ..data.prioritized import PRIORITY_KEY, is_weights
from ..models.normalization import RunningMeanStd, running_discounted_returns, scale_by_return_std
from ..registry import POLICY_REGISTRY
from ..rl_utils import vtrace
from .base import LearnNeed, Policy, build_optimizer


@POLICY_REGISTRY.register('impala')
class IMPALAPolicy(Policy):
    """IMPALA with V-trace, for discrete and continuous (Gaussian) actions."""

    supported_action_spaces = ('discrete', 'continuous')
    on_policy = False
    learn_draws_random = False  # V-trace and its losses are deterministic functions of the batch
    supports_rnn = True  # each unroll carries its first state; the learner recomputes the unroll from it
    train_sample_kind = 'unrolls'  # a ring of fixed unrolls (check_buffer_kind)

    config = dict(
        # (int > 0) Length T of the unrolls the learner trains on; one unroll is one sample of collect.n_sample.
        unroll_len=16,
        # (dict) Keyword arguments of the model (VAC: encoder_hidden_size_list, activation, obs_norm, ...; free-form but for rnn); obs_shape, action_shape and action_space are filled from the env when absent.
        model=dict(
            # (dict) A recurrent core (LSTM/GRU); each replayed unroll keeps the state at its first step, from which the learner recomputes it (the IMPALA paper's).
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
            # (int > 0) Learner iterations after each collection.
            update_per_collect=4,
            # (int > 0) Unrolls per training batch (the batch is (unroll_len, batch_size): batch_size x unroll_len transitions per learner iteration).
            batch_size=16,
            # (float > 0) Optimizer step size.
            learning_rate=0.0005,
            # (str in {'adam', 'rmsprop', 'rmsprop_tf'}) Optimizer: 'adam', 'rmsprop' or 'rmsprop_tf' (TensorFlow's RMSprop).
            optim='adam',
            # (float in [0, 1]) RMSprop smoothing constant alpha (decay of the squared-gradient average).
            rms_alpha=0.99,
            # (float > 0) RMSprop epsilon, added to the root of the squared-gradient average ('rmsprop_tf': under the root) (the IMPALA paper's Atari runs: 0.01, with loss_reduction='sum').
            rms_eps=0.00001,
            # (float >= 0) Weight of the value loss (the policy loss has weight 1).
            value_weight=0.5,
            # (float >= 0) Weight of the entropy bonus.
            entropy_weight=0.01,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float > 0) Rewards are multiplied by this before the V-trace targets are computed (e.g. 0.1 for Pendulum's -16..0 rewards).
            reward_scale=1.0,
            # (float in [0, 1]) V-trace's trace lambda (DI-engine's name): it scales the trace coefficients c_s = lambda min(c_bar, rho_s); 1.0 is the paper's V-trace. Not GAE's lambda (gae_lambda in A2C/PPO).
            lambda_=1.0,
            # (float >= 0) Clip rho-bar of the importance weights in the value target.
            rho_clip_ratio=1.0,
            # (float >= 0) Clip c-bar of the trace coefficients.
            c_clip_ratio=1.0,
            # (float >= 0) Clip of the importance weights in the policy-gradient advantage.
            rho_pg_clip_ratio=1.0,
            # (bool) Normalise the policy-gradient advantages rho_s (r_s + gamma v_{s+1} - V(x_s)) of each batch to zero mean and unit std.
            adv_norm=False,
            # (str in {'mean', 'sum'}) How each loss term reduces over the T x B steps of a batch: 'mean' or 'sum' (the IMPALA paper's, for which its rms_eps and grad_clip_value were set).
            loss_reduction='mean',
            # (str in {'clip_norm', 'clip_value', 'none'} or None) Gradient clipping: 'clip_norm' (global norm), 'clip_value' (elementwise) or 'none'.
            grad_clip_type='clip_norm',
            # (float >= 0) The norm (clip_norm) or absolute value (clip_value) gradients are clipped to (DI-engine's name; formerly clip_value, still read with a warning).
            grad_clip_value=40.0,
            # (int >= 0) Decay the learning rate linearly to 0 at this learner iteration; 0 keeps it constant.
            lr_decay_iters=0,
            # (bool) Divide rewards by the running std of each collector env's discounted return (SB3's norm_reward): the actors add each step's return G_t to the unrolls, the learner merges the G_t of every batch it trains on into its statistics (replay-weighted, as obs_norm) and divides by their std. Replaces reward_scale.
            reward_norm=False,
            # (float > 0) Normalized rewards (reward_norm) are clipped to [-reward_norm_clip, reward_norm_clip].
            reward_norm_clip=10.0,
        ),
        collect=dict(
            # (int > 0) Unrolls collected per collection across all collector envs (a multiple of env.collector_env_num; as in DI-engine): each env steps n_sample / collector_env_num * unroll_len times.
            n_sample=16,
            # (int >= 1) gSDE (policy.model.use_sde): env steps between two draws of each collector env's exploration matrix (SB3's sde_sample_freq).
            sde_sample_freq=4,
        ),
        other=dict(
            replay_buffer=dict(
                # (int in [1, 1_000_000_000]) Capacity of the replay buffer in unrolls; the oldest are dropped first.
                replay_buffer_size=1000,
                # (int > 0) An unroll is dropped after being trained on this many times.
                max_use=16,
            ),
        ),
    )

    # ---- learn -------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._optimizer = build_optimizer(self._model.parameters(), learn)
        self._params = list(self._model.parameters())
        self._return_rms = RunningMeanStd(()) if learn.reward_norm else None

    def _forward_learn(self, batch: ttorch.Tensor) -> Dict[str, float]:
        learn = self._cfg.learn
        self._update_obs_norm(batch.obs)  # replayed unrolls count once per use: replay-weighted statistics
        output = self._evaluate_rollout(batch)  # (T+1, B, ...); recurrent: from the unroll's stored first state
        ends = output.get('ends')  # (recurrent) the states a truncated episode's final observation is valued from
        values = output['value']
        target = self._distribution(output, drop_last=True)
        behaviour = self._distribution(batch)  # μ: the statistics the actor stored
        action = batch.action
        target_log_prob = target.log_prob(action)
        with torch.no_grad():
            log_rhos = target_log_prob - behaviour.log_prob(action)
            discounts = self._discounts(batch.terminated, batch.truncated)
            rewards = self._bootstrap_truncation(self._learn_reward(batch), batch.truncated, batch.final_obs,
                                                 None if ends is None else ends[:-1].detach())
        returns = vtrace(log_rhos, discounts, rewards, values[:-1], values[-1], lambda_=learn.lambda_,
                         rho_clip=learn.rho_clip_ratio, c_clip=learn.c_clip_ratio, pg_rho_clip=learn.rho_pg_clip_ratio)
        pg_advantages = self._normalize_advantages(returns.pg_advantages) if learn.adv_norm else returns.pg_advantages
        reduce = torch.mean if learn.loss_reduction == 'mean' else torch.sum
        weights = is_weights(batch)  # (B,) a prioritized buffer's importance-sampling weights, else None
        weigh = (lambda x: x) if weights is None else (lambda x: x * weights)  # each unroll's terms times its weight
        td = returns.vs - values[:-1]
        policy_loss = -reduce(weigh(target_log_prob * pg_advantages))
        value_loss = reduce(weigh(td.pow(2)))
        entropy = reduce(weigh(target.entropy()))
        total_loss = policy_loss + learn.value_weight * value_loss - learn.entropy_weight * entropy
        info = self._learn_step(total_loss, policy_loss=policy_loss, value_loss=value_loss, entropy=entropy,
                                mean_rho=log_rhos.exp().mean())
        if weights is not None:  # the unrolls' new priorities: mean |v_s - V(x_s)| over each unroll
            info[PRIORITY_KEY] = td.detach().abs().mean(0)
        return info

    def _learn_reward(self, batch: ttorch.Tensor) -> torch.Tensor:
        """The rewards the V-trace targets see: ``reward · reward_scale``, or with ``reward_norm`` the rewards divided by
        the std of the discounted returns ``G_t`` (``norm_return``, from the actors) of every batch trained on so far."""
        if self._return_rms is None:
            return self._scaled_reward(batch.reward)
        self._return_rms.update(batch.norm_return.cpu())  # CPU statistics, as RewardNormalizer's (policy.cuda)
        return scale_by_return_std(batch.reward, self._return_rms, self._cfg.learn.reward_norm_clip)

    def _learn_statistics(self) -> Dict[str, Any]:
        return {'return_rms': self._return_rms}

    def _monitor_vars_learn(self) -> List[str]:
        return super()._monitor_vars_learn() + ['policy_loss', 'value_loss', 'entropy', 'grad_norm', 'mean_rho']

    # ---- collect (forward: Policy's default, sample + distribution statistics; eval: its mode) -------
    @classmethod
    def train_sample_len(cls, cfg: Any) -> int:
        return int(cfg.unroll_len)

    @classmethod
    def learn_needs(cls, cfg: Any) -> List[LearnNeed]:
        size, unroll = int(cfg.learn.batch_size), int(cfg.unroll_len)
        return [LearnNeed(size * unroll, 'budget', f"policy.learn.batch_size={size} unrolls of policy.unroll_len={unroll} "
                          f"steps need", 'gradient steps', 'lower policy.learn.batch_size or policy.unroll_len')]

    def _init_collect(self) -> None:
        super()._init_collect()
        self._norm_return: Optional[torch.Tensor] = None  # (B,) each collector env's running return (reward_norm)

    def _reset_collect(self) -> None:
        super()._reset_collect()
        self._norm_return = None

    def _state_dict_collect(self) -> Dict[str, Any]:
        state = super()._state_dict_collect()
        if self._norm_return is not None:
            state['norm_return'] = self._norm_return.clone()
        return state

    def _load_state_dict_collect(self, state: Dict[str, Any]) -> None:
        super()._load_state_dict_collect(state)
        if state.get('norm_return') is not None:
            self._norm_return = state['norm_return'].clone()

    def _get_train_sample(self, segment: ttorch.Tensor) -> ttorch.Tensor:
        """The segment's whole unrolls; the steps of a segment cut by the budget beyond the last whole unroll
        (fewer than ``unroll_len`` per env) are not trained on. With ``reward_norm`` each step also carries
        ``norm_return``, its env's running discounted return ``G_t`` (continued from the previous segment). A recurrent
        model's unrolls keep their ``episode_start`` flags and the state at their first step only (the paper's)."""
        if self._cfg.learn.reward_norm:
            returns, self._norm_return = running_discounted_returns(
                segment.reward, segment.terminated | segment.truncated, self._norm_return, float(self._cfg.learn.discount_factor))
            segment = make_tree({**to_dict(segment), 'norm_return': returns.to(torch.float32)})
        samples = split_segment(segment, self._cfg.unroll_len, drop_remainder=True)
        if self._recurrent:  # only the state at each unroll's first step is kept: (N, 1, R, H), (1, B, R, H) in a batch
            samples = make_tree({**to_dict(samples), 'rnn_state': samples.rnn_state[:, :1].clone()})
        return samples

