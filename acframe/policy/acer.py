"""ACER (Wang et al. 2017, "Sample Efficient Actor-Critic with Experience Replay"), batched over (T, B).

Collect: sample actions from the current policy and keep its distribution statistics (the behaviour policy
``mu``: logits, or a Gaussian's mean and std). The segments go to the ``episodic`` replay buffer, which
serves the fresh segment first (the on-policy update, ``rho = 1``) and then ``~ Poisson(replay_ratio)``
replayed batches of ``unroll_len``-step sub-trajectories.

Learn, on a time-major batch ``(T, B)``, with the current network:

1. ``pi(.|x_t)``, ``Q(x_t, .)`` (discrete; ``V = sum_a pi Q``) or ``pi``, ``V(x_t)``, ``Q~(x_t, a_t)``,
   ``Q~(x_t, a'_t)`` with ``a'_t ~ pi`` (continuous, stochastic dueling network);
   ``rho_t = pi(a_t|x_t) / mu(a_t|x_t)``.
2. Rewards and per-step discounts: ``gamma_t = gamma (1 - (terminated_t | truncated_t))``; a truncated step's
   reward gets ``gamma V(final_obs_t)`` folded in (current weights, ``rl_utils.fold_truncation``; with an action
   mask, ``V = sum_a pi Q`` over the legal actions of the final observation's mask), so ``Q_ret`` bootstraps there
   from the final observation, not from the next episode.
3. ``Q_ret`` by Retrace with ``c_t = min(1, rho_t^(1/d))`` (``d = 1`` for discrete actions); optionally
   ``Q_opc`` (all ``c = 1``) in the policy gradient.
4. Per-step policy loss with the truncated importance weight ``min(c_bar, rho_t)`` and the bias correction
   (exact sum over actions for discrete, one sampled ``a'_t`` for continuous), ``rl_utils.acer_policy_loss_*``.
5. Efficient trust region: the policy loss's gradient w.r.t. the distribution statistics ``phi`` is
   projected so that its linearised KL to the average policy network (``phi_avg``) stays within
   ``delta`` (``rl_utils.acer_trust_region_loss``); the average network follows the weights by Polyak
   averaging, ``theta_avg <- alpha theta_avg + (1 - alpha) theta``, after every update.
6. ``L = mean(L_pi) - beta mean(H[pi]) + value_weight mean(1/2 (Q_ret - Q(x_t, a_t))^2
   [+ 1/2 (V_target_t - V(x_t))^2 for continuous actions, rl_utils.acer_value_target])``.
7. Prioritized replay (``replay_buffer.type='episodic_prioritized'``, docs/replay.md): on a replayed batch every
   per-step term of window ``b`` (the trust-region surrogate, entropy, critic) is multiplied by its importance-sampling
   weight ``w_b`` before the means, and the window's new priority is ``mean_t |Q_ret_t - Q(x_t, a_t)|``.

Memory (``policy.model.rnn``: an LSTM/GRU core in ``acer_q`` or ``acer_sdn``), as ChainerRL's recurrent
ACER and R2D2's stored states: the collect and eval modes keep one state per env (``Policy``'s ``EnvStates``), every
step of a segment stores the state it acted from (``rnn_state``) and whether an episode starts there
(``episode_start``), and the episodic buffer keeps both per transition. Every training batch -- the fresh segment and
each replayed window -- is recomputed with the current weights from the state stored at its first step, the state
zeroed before every episode start inside it; the average policy network unrolls the same steps from the same state.
With ``policy.model.rnn.burn_in = K`` the first ``K`` steps of every batch only warm the state (no gradient, no loss;
``_unroll_windows``). A stored state is the actors' (older weights for a replayed window): Retrace and the truncated
importance weights correct the actions' off-policyness, not the state's -- the burn-in is what lets the state drift
toward the current weights' before the loss.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

from ..data import flatten_lead, ttorch
from ..data.prioritized import PRIORITY_KEY, is_weights
from ..envs.masks import split_action_mask
from ..config.compile import recurrent_model
from ..errors import CheckpointError, ConfigError
from ..models import Categorical, DiagGaussian
from ..models.distributions import mask_logits
from ..registry import POLICY_REGISTRY
from ..rl_utils import (acer_policy_loss_continuous, acer_policy_loss_discrete, acer_trust_region_loss,
                        acer_value_target, discrete_kl, q_opc, retrace, truncated_trace)
from .base import LearnNeed, Policy, actor_critic_groups, build_optimizer, check_buffer_kind
from .compiled import grad_boundary

#: importance weights above this are counted as this in the logged mean (rho can overflow for Gaussians)
_RHO_LOG_CAP = 1e3


@POLICY_REGISTRY.register('acer')
class ACERPolicy(Policy):
    """ACER with Retrace, truncated importance sampling + bias correction and the efficient trust region."""

    supported_action_spaces = ('discrete', 'continuous')
    on_policy = False
    supports_rnn = True  # acer_q and acer_sdn: every window is recomputed from its stored first state
    async_training = True  # ChainerRL's async ACER: -m async runs Hogwild workers, each with its own episodic replay
    train_sample_kind = 'segments'  # the episodic buffer's trajectories (check_buffer_kind)

    config = dict(
        # (dict) Keyword arguments of the model (acer_q / acer_sdn: encoder_hidden_size_list, share_encoder, obs_norm, ...; free-form but for rnn); obs_shape, action_shape and action_space are filled from the env when absent.
        model=dict(
            # (dict) A recurrent core (LSTM/GRU); every window is recomputed from the actors' state stored at its first step, after an optional burn-in (docs/recurrent.md).
            rnn=dict(
                # (str in {'lstm', 'gru'} or None) Recurrent core between the encoder and the heads, one hidden state per env carried across steps and reset where an episode starts (docs/recurrent.md); None: feed-forward.
                type=None,
                # (int in [1, 4096]) Units of each recurrent layer (the heads read its output).
                hidden_size=64,
                # (int in [1, 16]) Stacked recurrent layers.
                num_layers=1,
                # (bool) A LayerNorm (learned scale and shift) on the core's input, the encoder's features at each step, so their scale cannot drift (docs/recurrent.md).
                input_norm=False,
                # (int >= 0) Burn-in: the first burn_in steps of every training batch (replayed window or fresh segment) only warm the state stored at its first step, with no loss on them (R2D2's); less than replay_buffer.unroll_len. 0: the loss covers every step.
                burn_in=0,
            ),
        ),
        learn=dict(
            # (int > 0) Upper bound on updates per collection: 1 on-policy update + the replayed ones the buffer schedules.
            update_per_collect=16,
            # (int > 0) Sub-trajectories of replay_buffer.unroll_len steps per replayed batch (batch_size x unroll_len transitions per learner iteration; the on-policy batch is the whole fresh segment).
            batch_size=16,
            # (float > 0) Optimizer step size (of the policy network only when critic_learning_rate is set).
            learning_rate=0.0007,
            # (float > 0 or None) Step size of the critic (the Q network: critic_encoder and its heads) when it differs from the policy's (DI-engine's learning_rate_critic); None uses learning_rate (needs model.share_encoder=False).
            critic_learning_rate=None,
            # (str in {'adam', 'rmsprop', 'rmsprop_tf'}) Optimizer: 'adam', 'rmsprop' or 'rmsprop_tf' (TensorFlow's RMSprop).
            optim='adam',
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float > 0) Rewards are multiplied by this before the targets are computed (e.g. 0.1 brings Pendulum's Q values near 1).
            reward_scale=1.0,
            # (float > 0 or None) Truncation threshold c_bar of the importance weight min(c_bar, rho) (10 in the paper); None: no truncation and no bias correction.
            c_clip_ratio=10.0,
            # (bool) Use Q_opc (Retrace with every c = 1) instead of Q_ret in the policy gradient (the paper's choice for continuous control).
            use_q_opc=False,
            # (float >= 0) Weight of the critic loss 1/2 (Q_ret - Q)^2 (+ 1/2 (V_target - V)^2 for continuous actions); 0.5 in ChainerRL.
            value_weight=0.5,
            # (float >= 0) Weight beta of the entropy bonus (0.01 in ChainerRL).
            entropy_weight=0.01,
            # (bool) Use the efficient trust region against the average policy network.
            trust_region=True,
            # (float >= 0) Trust-region bound delta on the linearised KL to the average policy (1 in the paper).
            trust_region_delta=1.0,
            # (float in [0, 1]) Polyak decay alpha of the average policy network: theta_avg <- alpha theta_avg + (1 - alpha) theta (0.99 in the paper).
            trust_region_alpha=0.99,
            # (str in {'clip_norm', 'clip_value', 'none'} or None) Gradient clipping: 'clip_norm' (global norm), 'clip_value' (elementwise) or 'none'.
            grad_clip_type='clip_norm',
            # (float >= 0) The norm (clip_norm) or absolute value (clip_value) gradients are clipped to (DI-engine's name; formerly clip_value, still read with a warning).
            grad_clip_value=40.0,
            # (int >= 0) Decay the learning rate linearly to 0 at this learner iteration; 0 keeps it constant.
            lr_decay_iters=0,
        ),
        collect=dict(
            # (int > 0) Sub-trajectories of replay_buffer.unroll_len steps collected per collection across all collector envs (a multiple of env.collector_env_num; as in DI-engine): the on-policy update's T is n_sample / collector_env_num * unroll_len.
            n_sample=8,
        ),
        other=dict(
            replay_buffer=dict(
                # (str) ACER replays trajectories: the 'episodic' buffer (acframe.data.episodic_buffer), or 'episodic_prioritized' for prioritized replay (docs/replay.md).
                type='episodic',
                # (int in [1, 1_000_000_000]) Capacity in transitions; whole episodes are evicted, oldest first.
                replay_buffer_size=50000,
                # (int > 0) Length of the replayed sub-trajectories (k = 20 in the paper); one is one sample of collect.n_sample.
                unroll_len=20,
                # (float >= 0) Replayed batches per on-policy update (the mean of the Poisson draw with 'poisson'; 4 in the paper).
                replay_ratio=4.0,
                # (str in {'poisson', 'fixed'}) 'poisson': n ~ Poisson(replay_ratio) replays per collection (the paper); 'fixed': replay_ratio per collection.
                replay_ratio_type='poisson',
                # (int >= 0) No replay until the buffer holds this many transitions (10000 in ChainerRL).
                replay_start_size=10000,
            ),
        ),
    )

    @classmethod
    def train_sample_len(cls, cfg: Any) -> int:
        return int(cfg.other.replay_buffer.unroll_len)

    @classmethod
    def learn_needs(cls, cfg: Any) -> List[LearnNeed]:
        """The on-policy update needs one stored segment; replays need ``replay_start_size`` stored transitions."""
        needs = [LearnNeed(1, 'budget', "the first (on-policy) update needs a stored segment of at least", 'gradient steps',
                           'lower policy.collect.n_sample')]
        start = int(cfg.other.replay_buffer.replay_start_size)
        if start > 0:
            needs.append(LearnNeed(start, 'budget', f"policy.other.replay_buffer.replay_start_size={start} needs", 'replayed '
                                   'updates (only on-policy ones)', 'lower policy.other.replay_buffer.replay_start_size'))
        return needs

    @classmethod
    def check_run_config(cls, cfg: Any) -> None:
        """ACER learns a Q head: acframe's ``vac`` model (no Q head) is refused. A recurrent ACER needs a burn-in that
        leaves steps to learn from in every window (``burn_in < unroll_len``)."""
        super().check_run_config(cfg)
        from ..models.vac import VAC
        from ..registry import MODEL_REGISTRY

        model_type = cfg.policy.model.get('type')
        # acframe's VAC itself (a user's subclass may add a Q head; a factory function is not looked into)
        if model_type and isinstance(model_type, str) and model_type in MODEL_REGISTRY.names() \
                and MODEL_REGISTRY.get(model_type) is VAC:
            raise ConfigError(f"policy.model.type='{model_type}' has no Q head, which policy 'acer' learns (Retrace "
                              f"targets); use 'acer_q' (discrete actions) or 'acer_sdn' (continuous), ACER's defaults, "
                              f"or a model of your own with a q_value output")
        rnn = cfg.policy.model.get('rnn') or {}
        burn_in, length = int(rnn.get('burn_in') or 0), int(cfg.policy.other.replay_buffer.unroll_len)
        if recurrent_model(cfg.policy) and burn_in >= length:
            raise ConfigError(f"policy.model.rnn.burn_in={burn_in} leaves no step to learn from in the windows of "
                              f"policy.other.replay_buffer.unroll_len={length} steps; set burn_in below {length}")

    def default_model(self) -> Tuple[str, Dict[str, Any]]:
        return ('acer_q' if self._action_space == 'discrete' else 'acer_sdn'), {}

    def _check_sdn_model(self) -> None:
        """Continuous ACER learns ``Q~`` at given actions (the stochastic dueling network, the default 'acer_sdn'
        model's): a model of a user's without it is refused in one line at the start (it was an AttributeError
        traceback at the first gradient step, the run's folder left behind)."""
        import inspect

        model = self._model
        needs = ('sdn_q',) if self._recurrent else ('compute_actor', 'compute_critic', 'compute_actor_critic')
        lacking = [name for name in needs if not callable(getattr(model, name, None))]
        takes_actions = True
        if not lacking and not self._recurrent:
            try:
                params = inspect.signature(model.compute_actor_critic).parameters.values()
                takes_actions = any(p.name == 'actions' or p.kind is p.VAR_KEYWORD for p in params)
            except (TypeError, ValueError):
                pass
        if lacking or not takes_actions:
            cls = type(model)
            what = (f"has no {', no '.join(lacking)}" if lacking else "has a compute_actor_critic that takes no actions=")
            how = ("sdn_q(critic_feature, value, mu, sigma, actions) giving Q~ (N, K) for actions (N, K, action_dim)"
                   if self._recurrent else "compute_actor(obs), compute_critic(obs) and compute_actor_critic(obs, "
                   "actions=None) giving 'q_value' (N, K) for actions (N, K, action_dim) as well")
            raise ConfigError(f"policy '{self._cfg.get('type', 'acer')}' with continuous actions learns Q~ at given "
                              f"actions (a stochastic dueling network): the model ({cls.__module__}.{cls.__qualname__}) {what}; use "
                              f"policy.model.type='acer_sdn' (the default), or give the model {how} "
                              f"(docs/custom_policy.md)")

    # ---- learn -------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        if self._action_space == 'continuous':
            self._check_sdn_model()
        learn = self._cfg.learn  # its values were checked by compile_config against the declarations in config
        critic_lr = learn.critic_learning_rate
        params: Any = self._model.parameters() if critic_lr is None else actor_critic_groups(self._model, float(critic_lr))
        self._optimizer = build_optimizer(params, learn)
        self._average_model = copy.deepcopy(self._model)
        self._average_model.requires_grad_(False)
        for module in self._average_model.modules():  # a copy's cuDNN RNN weights are separate tensors: one chunk
            if isinstance(module, torch.nn.RNNBase):  # again, else cuDNN compacts them at every call (no-op on a CPU)
                module.flatten_parameters()
        if getattr(self._model, 'obs_normalizer', None) is not None:  # one set of statistics: pi and pi_avg see the same x
            self._average_model.obs_normalizer = self._model.obs_normalizer
        self._params = list(self._model.parameters())
        self._average_params = list(self._average_model.parameters())

    def _forward_learn(self, batch: ttorch.Tensor) -> Dict[str, float]:
        learn = self._cfg.learn
        self._update_obs_norm(batch.obs)  # replayed sub-trajectories count once per use, as IMPALA's unrolls
        weights = is_weights(batch)  # (B,) a prioritized buffer's importance-sampling weights, else None
        weigh = (lambda x: x) if weights is None else (lambda x: x * weights)  # each window's terms times its weight
        terms = self._discrete_terms(batch) if self._action_space == 'discrete' else self._continuous_terms(batch)
        per_step = terms['policy_loss']
        if learn.trust_region:  # the projection acts on each step's own gradient; its weight scales the result
            policy_loss = weigh(acer_trust_region_loss(per_step, terms['kl'], terms['stats'],
                                                       learn.trust_region_delta)).mean()
        else:
            policy_loss = weigh(per_step).mean()
        entropy = weigh(terms['entropy']).mean()
        td = terms['q_ret'] - terms['q_taken']
        q_loss = 0.5 * weigh(td.pow(2)).mean()
        extra = {'value_loss': 0.5 * weigh(terms['value_error'].pow(2)).mean()} if 'value_error' in terms else {}
        critic_loss = q_loss + extra['value_loss'] if extra else q_loss
        total_loss = policy_loss - learn.entropy_weight * entropy + learn.value_weight * critic_loss
        rho = terms['rho']
        info = self._learn_step(
            total_loss, policy_loss=per_step.mean(), q_loss=q_loss, entropy=entropy, kl_to_average=terms['kl'].mean(),
            mean_rho=rho.clamp(max=_RHO_LOG_CAP).mean(),
            rho_truncated_fraction=(rho > learn.c_clip_ratio).float().mean() if learn.c_clip_ratio else 0.0,
            mean_q_ret=terms['q_ret'].mean(), **extra)
        self._update_average_model()
        if weights is not None:  # the windows' new priorities: mean |Q_ret - Q(x_t, a_t)| over each window
            info[PRIORITY_KEY] = td.detach().abs().mean(0)
        return info

    def _rewards_and_discounts(self, batch: ttorch.Tensor,
                               ends: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """Per-step discounts (0 at episode ends) and scaled rewards with gamma V(final_obs) folded in at truncations
        (a recurrent model values a final observation from ``ends`` ``(T, B, R, H)``, the state after its step)."""
        truncated = batch.truncated & ~batch.terminated
        discounts = self._discounts(batch.terminated, batch.truncated)
        reward = self._scaled_reward(batch.reward)
        return self._bootstrap_truncation(reward, truncated, batch.final_obs, ends), discounts

    def _targets(self, batch: ttorch.Tensor, rho: torch.Tensor, q_taken: torch.Tensor, values: torch.Tensor,
                 bootstrap_value: torch.Tensor, action_dim: int,
                 ends: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(Q_ret, the target of the policy gradient: Q_ret or Q_opc)``."""
        rewards, discounts = self._rewards_and_discounts(batch, ends)
        args = (rewards, discounts, q_taken.detach(), values.detach(), bootstrap_value.detach())
        q_ret = retrace(*args, c=truncated_trace(rho, action_dim))
        return q_ret, (q_opc(*args) if self._cfg.learn.use_q_opc else q_ret)

    def _unroll_windows(self, batch: ttorch.Tensor) -> Tuple[ttorch.Tensor, Dict[str, torch.Tensor],
                                                             Dict[str, torch.Tensor]]:
        """A recurrent model's outputs on a batch (a fresh segment or replayed windows, ``(T, B)``), recomputed with the
        current weights from the actors' state stored at its first step (``rnn_state[0]``), the state zeroed before
        every step flagged in ``episode_start`` and before the bootstrap observation when the last step ended its
        episode (``Policy._evaluate_rollout``'s rule). With ``policy.model.rnn.burn_in = K`` the first ``K`` steps
        only warm the state (no gradient) and are dropped from the batch. The average policy network unrolls the
        same steps the same way from the same stored state (its own burn-in included).

        Returns ``(the batch without its burn-in steps, outputs (T-K+1, B, ...) with 'ends', the average network's
        outputs (T-K, B, ...))``.
        """
        done = batch.terminated | batch.truncated
        starts = torch.cat([torch.zeros_like(done[:1]), batch.episode_start[1:].to(torch.bool), done[-1:]])
        burn_in = int(self._cfg.model.rnn.get('burn_in') or 0)
        state = average_state = batch.rnn_state[0]
        if burn_in:
            with torch.no_grad():  # ends[-1]: the state after the last burn-in step
                state = self._evaluate_unroll(batch.obs[:burn_in], state, starts[:burn_in])['ends'][-1]
                average_state = self._evaluate_unroll(batch.obs[:burn_in], average_state, starts[:burn_in],
                                                      model=self._average_model)['ends'][-1]
            batch, starts = batch[burn_in:], starts[burn_in:]
        out = self._evaluate_unroll(batch.obs, state, starts)
        with torch.no_grad():
            average = self._evaluate_unroll(batch.obs[:-1], average_state, starts[:-1], model=self._average_model,
                                            actor_only=True)  # its action distribution: no critic core to run
        return batch, out, average

    def _discrete_terms(self, batch: ttorch.Tensor) -> Dict[str, torch.Tensor]:
        ends = average_logit = None
        if self._recurrent:  # (T+1, B, ...) from the stored state, the burn-in steps dropped from the batch
            batch, out, average = self._unroll_windows(batch)
            average_logit, ends = average['logit'], out['ends'][:-1].detach()
        else:
            out = self._evaluate(batch.obs)  # (T+1, B, ...); the logits of illegal actions masked (docs/masks.md)
        obs = batch.obs
        if split_action_mask(obs)[1] is not None:  # V = Σ π Q over the legal actions (the model's V used all)
            out['value'] = (F.softmax(out['logit'], dim=-1) * out['q_value']).sum(-1)
        # phi = the logits, which the trust region differentiates by (grad_boundary: also under policy.learn.compile)
        logit, q_values, values = grad_boundary(out['logit'][:-1]), out['q_value'][:-1], out['value']
        action = batch.action.long()
        log_probs = F.log_softmax(logit, dim=-1)
        behaviour_log_probs = F.log_softmax(batch.logit, dim=-1)
        with torch.no_grad():
            index = action.unsqueeze(-1)
            rho = (log_probs.gather(-1, index) - behaviour_log_probs.gather(-1, index)).squeeze(-1).exp()
            if average_logit is None:
                average_logit = self._compute_actor(flatten_lead(obs[:-1], 2), model=self._average_model)['logit']
        q_taken = q_values.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        q_ret, q_pg = self._targets(batch, rho, q_taken, values[:-1], values[-1], 1, ends)
        policy_loss = acer_policy_loss_discrete(log_probs, behaviour_log_probs.exp(), action, q_values, values[:-1],
                                                q_pg, self._cfg.learn.c_clip_ratio)
        return {
            'policy_loss': policy_loss, 'stats': logit, 'rho': rho, 'q_ret': q_ret, 'q_taken': q_taken,
            'kl': discrete_kl(average_logit.reshape(logit.shape), logit),
            'entropy': Categorical(logit).entropy(),
        }

    def _critic_keys(self) -> Tuple[str, ...]:
        """Discrete ACER's critic is Q as well as V (``Q_ret`` targets Q; V bootstraps the truncations)."""
        return ('q_value', 'value') if self._action_space == 'discrete' else ('value',)

    def _final_value(self, obs: Any, state: Any = None) -> torch.Tensor:
        """``V(x) = Σ_a π(a|x) Q(x, a)`` of a truncated episode's final observations ``(N, ...)``, over the legal
        actions of the mask each one carries (the model's own V, over every action, without a mask; a final
        observation with no legal action, which is never acted on, falls back to every action)."""
        plain, mask = split_action_mask(obs)
        if mask is None or self._action_space != 'discrete':
            return super()._final_value(obs, state)
        legal = mask != 0
        out = self._model(plain, mode='compute_actor_critic', **({} if state is None else {'state': state}))
        logit = mask_logits(out['logit'], legal | ~legal.any(-1, keepdim=True))
        return (F.softmax(logit, dim=-1) * out['q_value']).sum(-1)

    def _continuous_terms(self, batch: ttorch.Tensor) -> Dict[str, torch.Tensor]:
        ends = None
        if self._recurrent:  # (T+1, B, ...) from the stored state, the burn-in steps dropped from the batch
            batch, unrolled, average = self._unroll_windows(batch)
            ends = unrolled['ends'][:-1].detach()
        steps, size = batch.reward.shape
        obs = batch.obs
        action = batch.action
        dim = action.shape[-1]
        if self._recurrent:  # the SDN's Q~ at the taken action and at one a' ~ pi, on the core's outputs
            flat = {k: v[:-1].reshape((steps * size,) + tuple(v.shape[2:])) for k, v in unrolled.items()}
            with torch.no_grad():
                sampled = DiagGaussian(flat['mu'].detach(), flat['sigma'].detach()).sample().reshape(steps, size, dim)
                bootstrap_value = unrolled['value'][-1].detach()
            out = {'mu': flat['mu'], 'sigma': flat['sigma'], 'value': flat['value'],
                   'q_value': self._model.sdn_q(flat['feature'], flat['value'], flat['mu'], flat['sigma'],
                                                torch.stack([action, sampled], dim=2).reshape(-1, 2, dim))}
            average = {k: average[k].reshape(steps * size, dim) for k in ('mu', 'sigma')}
        else:
            flat_obs = flatten_lead(obs[:-1], 2)
            # Q~ at the taken action and at one action a' ~ pi drawn here (for the bias correction)
            with torch.no_grad():
                actor = self._model.compute_actor(flat_obs)
                sampled = DiagGaussian(actor['mu'], actor['sigma']).sample().reshape(steps, size, dim)
                bootstrap_value = self._model.compute_critic(obs[-1])['value']
                average = self._average_model.compute_actor(flat_obs)
            out = self._model.compute_actor_critic(flat_obs,
                                                   actions=torch.stack([action, sampled], dim=2).reshape(-1, 2, dim))
        # phi: the distribution statistics (mean, log std) the trust region acts on
        stats = grad_boundary(torch.cat([out['mu'], out['sigma'].log()], dim=-1).reshape(steps, size, 2 * dim))
        policy = DiagGaussian(stats[..., :dim], stats[..., dim:].exp())
        behaviour = DiagGaussian(batch.mu, batch.sigma)
        values = out['value'].reshape(steps, size)
        q_taken, q_sampled = out['q_value'].reshape(steps, size, 2).unbind(-1)
        log_prob_taken, log_prob_sampled = policy.log_prob(action), policy.log_prob(sampled)
        with torch.no_grad():
            rho = (log_prob_taken - behaviour.log_prob(action)).exp()
            rho_sampled = (log_prob_sampled - behaviour.log_prob(sampled)).exp()
        q_ret, q_pg = self._targets(batch, rho, q_taken, values, bootstrap_value, dim, ends)
        policy_loss = acer_policy_loss_continuous(log_prob_taken, log_prob_sampled, rho, rho_sampled,
                                                  q_pg - values.detach(), (q_sampled - values).detach(),
                                                  self._cfg.learn.c_clip_ratio)
        value_target = acer_value_target(rho, q_ret, q_taken.detach(), values.detach())
        average_policy = DiagGaussian(average['mu'].reshape(stats[..., :dim].shape),
                                      average['sigma'].reshape(stats[..., :dim].shape))
        return {
            'policy_loss': policy_loss, 'stats': stats, 'rho': rho, 'q_ret': q_ret, 'q_taken': q_taken,
            'value_error': value_target - values,  # (T, B), V_target - V(x_t)
            'kl': average_policy.kl(policy),
            'entropy': policy.entropy(),
        }

    def _update_average_model(self) -> None:
        """``theta_avg <- alpha theta_avg + (1 - alpha) theta``."""
        with torch.no_grad():
            torch._foreach_lerp_(self._average_params, self._params, 1.0 - self._cfg.learn.trust_region_alpha)

    def share_memory(self) -> None:
        """The model, the optimizer's statistics and the average policy network in shared memory (``-m async``: every
        worker's update moves the one average network, as ChainerRL's ``shared_average_model``)."""
        super().share_memory()
        self._average_model.share_memory()

    def _state_dict_learn(self) -> Dict[str, Any]:
        return {'model': self._model.state_dict(), 'average_model': self._average_model.state_dict(),
                'optimizer': self._optimizer.state_dict()}

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        try:
            self._average_model.load_state_dict(state.get('average_model', state['model']))
        except (KeyError, RuntimeError) as exc:
            raise CheckpointError(f"the checkpoint's average model does not fit this policy's model: {exc}") from exc

    def _monitor_vars_learn(self) -> List[str]:
        extra = ['value_loss'] if self._action_space == 'continuous' else []
        return super()._monitor_vars_learn() + ['policy_loss', 'q_loss'] + extra + [
            'entropy', 'kl_to_average', 'mean_rho', 'rho_truncated_fraction', 'mean_q_ret', 'grad_norm']

    # ---- collect -----------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        check_buffer_kind(self._cfg, type(self))  # (also where a policy is built without create_policy's checks)

