"""ACER's models: a policy with a Q critic (Wang et al. 2017).

* ``acer_q`` (:class:`ACERDiscrete`), discrete actions: policy logits and ``Q(x, .)`` heads over an MLP body
  (shared or separate); ``V(x) = sum_a pi(a|x) Q(x, a)``.
* ``acer_sdn`` (:class:`ACERSDN`), continuous actions: a Gaussian policy and the *stochastic dueling network*
  (sec. 4 of the paper), ``Q~(x, a) = V(x) + A(x, a) - 1/n sum_i A(x, a'_i)`` with ``a'_i ~ pi(.|x)``, which
  estimates ``Q`` and ``V`` together (``E_{a~pi} Q~(x, a) = V(x)`` in expectation).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..registry import MODEL_REGISTRY
from .common import init_orthogonal, mlp
from .encoders import build_encoder, check_layer_sizes, use_channels_last
from .normalization import ObsNormalizer, normalize_obs, obs_normalizer
from .recurrent import RecurrentTrunk


def _check_space(model: str, action_space: str, expected: str) -> None:
    if action_space != expected:
        raise ValueError(f"model '{model}' is for {expected} actions, got action_space '{action_space}'; "
                         f"use {'acer_q' if action_space == 'discrete' else 'acer_sdn'} for {action_space} actions")


@MODEL_REGISTRY.register('acer_q')
class ACERDiscrete(RecurrentTrunk, nn.Module):
    """Categorical policy and ``Q(x, .)`` heads for discrete actions.

    Args:
        obs_shape: observation size (vector observations), image shape, or ``{key: shape}`` of a Dict observation.
        action_shape: number of actions.
        action_space: must be ``'discrete'``.
        encoder_hidden_size_list: hidden sizes of the body MLP (after the conv layers of an image encoder).
        encoder: ``'mlp'`` (vectors), ``'nature_cnn'`` or ``'impala_resnet'`` (images); see ``models.encoders``.
        encoder_channels: channels of the conv layers of an image encoder (None: the paper's).
        image_layout: how 3-D image observations are read, ``'auto'``, ``'chw'``, ``'hwc'`` or a dict of them by
            image key (as ``VAC``'s).
        vector_encoder: Dict observations: what their vector keys (concatenated) go through, ``'mlp'`` or ``'identity'``.
        vector_hidden_size_list: Dict observations: hidden sizes of the ``'mlp'`` vector encoder.
        share_encoder: one body for the policy and Q heads (True) or a body each (False).
        activation: ``'tanh'``, ``'relu'`` or ``'elu'``.
        orthogonal_init: orthogonal weight init (gain sqrt(2) body, 0.01 policy head, 1 Q head).
        obs_norm: normalize observations by their running mean and std (``self.obs_normalizer``, as ``VAC``'s; the
            learn mode updates it from every batch, replays included, and the average policy network shares it).
        obs_norm_clip: normalized observations are clipped to ``[-obs_norm_clip, obs_norm_clip]``.
        rnn: a recurrent core between the encoder and the heads, ``dict(type='lstm'|'gru', hidden_size, num_layers)``
            (``models.recurrent.RecurrentTrunk``, as ``VAC``'s; with ``share_encoder=False`` a core each, the Q head
            reading the critic's): every ``compute_*`` then takes ``state`` ``(N, R, H)`` (``2R`` rows with a core each)
            and returns the next one as ``'state'``, and ``unroll`` runs a time-major sequence (the learner's
            recompute); see docs/recurrent.md.

    ``forward(obs, mode, state=None)``: ``'compute_actor'`` -> ``{'logit' (N, A)}``; ``'compute_critic'`` ->
    ``{'q_value' (N, A), 'value' (N,)}``; ``'compute_actor_critic'`` -> all three.
    """

    #: the critic's modules (``policy.learn.critic_learning_rate`` steps them at its own rate)
    critic_modules = ('critic_encoder', 'critic_core', 'q_head')

    def __init__(self, obs_shape: int, action_shape: int, action_space: str = 'discrete',
                 encoder_hidden_size_list: Sequence[int] = (64, 64), share_encoder: bool = False,
                 activation: str = 'tanh', orthogonal_init: bool = True, encoder: str = 'mlp',
                 encoder_channels: Optional[Sequence[int]] = None, vector_encoder: str = 'mlp',
                 vector_hidden_size_list: Sequence[int] = (64,), obs_norm: bool = False,
                 obs_norm_clip: float = 10.0, rnn: Optional[Mapping[str, Any]] = None,
                 image_layout: Union[str, Mapping[str, str]] = 'auto') -> None:
        super().__init__()
        _check_space('acer_q', action_space, 'discrete')
        n_actions = int(action_shape)
        check_layer_sizes(encoder_hidden_size_list, 'encoder_hidden_size_list')  # (list() of an int: a TypeError)
        hidden = list(encoder_hidden_size_list)
        self.share_encoder = share_encoder
        self.obs_normalizer: Optional[ObsNormalizer] = obs_normalizer(obs_shape, obs_norm_clip) if obs_norm else None
        encoder_args = (obs_shape, encoder, hidden, activation, encoder_channels, vector_encoder, vector_hidden_size_list,
                        image_layout)
        self.actor_encoder, feature = build_encoder(*encoder_args)
        self.critic_encoder = self.actor_encoder if share_encoder else build_encoder(*encoder_args)[0]
        feature = self._build_core(feature, rnn)  # the heads read the core's output when recurrent
        self.policy_head = nn.Linear(feature, n_actions)
        self.q_head = nn.Linear(feature, n_actions)
        if orthogonal_init:
            init_orthogonal(self.actor_encoder, math.sqrt(2))
            if not share_encoder:
                init_orthogonal(self.critic_encoder, math.sqrt(2))
            init_orthogonal(self.policy_head, 0.01)
            init_orthogonal(self.q_head, 1.0)
        use_channels_last(self)

    def compute_actor(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        obs = normalize_obs(self.obs_normalizer, obs)
        if self.core is None:
            return {'logit': self.policy_head(self.actor_encoder(obs))}
        out: Dict[str, torch.Tensor] = {}
        out['logit'] = self.policy_head(self._step(obs, state, out, critic=False)[0])
        return out

    def compute_critic(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        out = self.compute_actor_critic(obs, state)
        return {k: out[k] for k in ('q_value', 'value', 'state') if k in out}

    def compute_actor_critic(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        obs = normalize_obs(self.obs_normalizer, obs)
        extra: Dict[str, torch.Tensor] = {}
        actor_feature, critic_feature = self._step(obs, state, extra)
        out = self._heads(actor_feature, critic_feature)
        out.update(extra)
        return out

    def _heads(self, actor_feature: torch.Tensor, critic_feature: torch.Tensor) -> Dict[str, torch.Tensor]:
        logit = self.policy_head(actor_feature)
        q_value = self.q_head(critic_feature)
        value = (F.softmax(logit, dim=-1) * q_value).sum(-1)
        return {'logit': logit, 'q_value': q_value, 'value': value}

    def unroll(self, obs: Any, state: torch.Tensor, starts: torch.Tensor) -> Dict[str, torch.Tensor]:
        """``compute_actor_critic`` over a time-major sequence (the learner's recompute; recurrent models only).

        Args:
            obs: observations ``(T*B, *obs_shape)``, time-major flattened (a dict per key for Dict observations).
            state: the state before step 0, ``(B, R, H)``.
            starts: ``(T, B)`` bool, True where an episode starts (the state is zeroed before that step).

        Returns:
            ``logit``, ``q_value``, ``value`` ``(T*B, ...)`` and ``'ends'`` ``(T*B, R[+R], H)``: the state after every step
            that ends a fragment (``RecurrentCore.unroll``), zeros elsewhere.
        """
        actor_feature, critic_feature, ends = self._unroll_features(obs, state, starts)
        out = self._heads(actor_feature, critic_feature)
        out['ends'] = ends
        return out

    def unroll_actor(self, obs: Any, state: torch.Tensor, starts: torch.Tensor) -> Dict[str, torch.Tensor]:
        """``unroll``'s ``logit`` alone, without the critic's core and head and without fragment-end states (an
        LSTM's one lane per column, ``RecurrentTrunk._unroll_actor_feature``): what the average policy network
        contributes to the trust region."""
        return {'logit': self.policy_head(self._unroll_actor_feature(obs, state, starts))}

    def forward(self, obs: torch.Tensor, mode: str = 'compute_actor_critic',
                state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        if state is not None:
            if mode not in ('compute_actor', 'compute_critic', 'compute_actor_critic'):
                return _dispatch(self, obs, mode)  # its error
            return getattr(self, mode)(obs, state)
        return _dispatch(self, obs, mode)


@MODEL_REGISTRY.register('acer_sdn')
class ACERSDN(RecurrentTrunk, nn.Module):
    """Gaussian policy and stochastic dueling network (SDN) critic for continuous actions.

    The critic body feeds a value head ``V(x)`` and an advantage MLP ``A(x, a)`` on ``[feature, a]``;
    ``Q~(x, a) = V(x) + A(x, a) - 1/n sum_i A(x, a'_i)``, ``a'_i ~ pi(.|x)`` sampled without gradient.

    Args:
        obs_shape: observation size, image shape, or ``{key: shape}`` of a Dict observation.
        action_shape: action dimension ``d``.
        action_space: must be ``'continuous'``.
        encoder_hidden_size_list: hidden sizes of the body MLP(s) (after the conv layers of an image encoder).
        encoder: ``'mlp'`` (vectors), ``'nature_cnn'`` or ``'impala_resnet'`` (images); see ``models.encoders``.
        encoder_channels: channels of the conv layers of an image encoder (None: the paper's).
        image_layout: how 3-D image observations are read, ``'auto'``, ``'chw'``, ``'hwc'`` or a dict of them by
            image key (as ``VAC``'s).
        vector_encoder: Dict observations: what their vector keys (concatenated) go through, ``'mlp'`` or ``'identity'``.
        vector_hidden_size_list: Dict observations: hidden sizes of the ``'mlp'`` vector encoder.
        share_encoder: one body for the policy and the critic (True) or a body each (False).
        advantage_hidden_size_list: hidden sizes of the advantage MLP on ``[critic feature, action]``.
        activation: ``'tanh'``, ``'relu'`` or ``'elu'``.
        sigma_type: ``'independent'`` (a learned log-std per dim) or ``'conditioned'`` (a head on the body).
        init_sigma: initial std of the Gaussian.
        n_action_samples: ``n``, the actions sampled from ``pi`` for the SDN's mean advantage.
        mu_bound: squash the Gaussian's mean into ``[-mu_bound, mu_bound]`` with ``tanh`` (e.g. the action
            bound, so the mean cannot drift where every action is clipped alike); 0 leaves it unbounded.
        orthogonal_init: orthogonal weight init.
        obs_norm: normalize observations by their running mean and std (``self.obs_normalizer``, as ``VAC``'s; the
            learn mode updates it from every batch, replays included, and the average policy network shares it).
        obs_norm_clip: normalized observations are clipped to ``[-obs_norm_clip, obs_norm_clip]``.
        rnn: a recurrent core between the encoder and the heads, as ``acer_q``'s (with ``share_encoder=False`` a core
            each, ``V`` and the advantage network reading the critic's): every ``compute_*`` then takes ``state`` and
            returns the next one as ``'state'``, and ``unroll`` runs a time-major sequence.

    ``forward(obs, mode, actions=None, state=None)``: ``'compute_actor'`` -> ``{'mu', 'sigma'}``; ``'compute_critic'`` ->
    ``{'value' (N,)}``; ``'compute_actor_critic'`` -> all three, plus ``'q_value' (N, K)`` = ``Q~(x, a_k)``
    when ``actions (N, K, d)`` are given (one set of ``a'_i`` serves all ``K`` actions of a state).
    """

    #: the critic's modules (``policy.learn.critic_learning_rate`` steps them at its own rate)
    critic_modules = ('critic_encoder', 'critic_core', 'value_head', 'advantage')

    def __init__(self, obs_shape: int, action_shape: int, action_space: str = 'continuous',
                 encoder_hidden_size_list: Sequence[int] = (64, 64), share_encoder: bool = False,
                 advantage_hidden_size_list: Sequence[int] = (64,), activation: str = 'tanh',
                 sigma_type: str = 'independent', init_sigma: float = 1.0, n_action_samples: int = 5,
                 mu_bound: float = 0.0, orthogonal_init: bool = True, encoder: str = 'mlp',
                 encoder_channels: Optional[Sequence[int]] = None, vector_encoder: str = 'mlp',
                 vector_hidden_size_list: Sequence[int] = (64,), obs_norm: bool = False,
                 obs_norm_clip: float = 10.0, rnn: Optional[Mapping[str, Any]] = None,
                 image_layout: Union[str, Mapping[str, str]] = 'auto') -> None:
        super().__init__()
        _check_space('acer_sdn', action_space, 'continuous')
        if sigma_type not in ('independent', 'conditioned'):
            raise ValueError(f"policy.model.sigma_type '{sigma_type}' is not 'independent' or 'conditioned'")
        if mu_bound < 0:
            raise ValueError(f"policy.model.mu_bound must be >= 0 (0: unbounded); got {mu_bound}")
        if n_action_samples < 1:
            raise ValueError(f"policy.model.n_action_samples must be >= 1; got {n_action_samples}")
        action_dim = int(action_shape)
        check_layer_sizes(encoder_hidden_size_list, 'encoder_hidden_size_list')  # (list() of an int: a TypeError)
        hidden = list(encoder_hidden_size_list)
        self.action_dim = action_dim
        self.share_encoder = share_encoder
        self.sigma_type = sigma_type
        self.n_action_samples = int(n_action_samples)
        self.mu_bound = float(mu_bound)
        self.obs_normalizer: Optional[ObsNormalizer] = obs_normalizer(obs_shape, obs_norm_clip) if obs_norm else None
        encoder_args = (obs_shape, encoder, hidden, activation, encoder_channels, vector_encoder, vector_hidden_size_list,
                        image_layout)
        self.actor_encoder, feature = build_encoder(*encoder_args)
        self.critic_encoder = self.actor_encoder if share_encoder else build_encoder(*encoder_args)[0]
        feature = self._build_core(feature, rnn)  # the heads read the core's output when recurrent
        self.mu_head = nn.Linear(feature, action_dim)
        if sigma_type == 'independent':
            self.log_sigma = nn.Parameter(torch.full((action_dim,), math.log(init_sigma)))
        else:
            self.log_sigma_head = nn.Linear(feature, action_dim)
        self.value_head = nn.Linear(feature, 1)
        check_layer_sizes(advantage_hidden_size_list, 'advantage_hidden_size_list')
        adv_hidden = list(advantage_hidden_size_list)
        self.advantage = nn.Sequential(mlp(feature + action_dim, adv_hidden, activation),
                                       nn.Linear(adv_hidden[-1] if adv_hidden else feature + action_dim, 1))
        if orthogonal_init:
            init_orthogonal(self.actor_encoder, math.sqrt(2))
            if not share_encoder:
                init_orthogonal(self.critic_encoder, math.sqrt(2))
            init_orthogonal(self.mu_head, 0.01)
            init_orthogonal(self.value_head, 1.0)
            init_orthogonal(self.advantage, math.sqrt(2), last_gain=1.0)
        if sigma_type == 'conditioned':  # after the orthogonal init: start at init_sigma everywhere
            nn.init.zeros_(self.log_sigma_head.weight)
            nn.init.constant_(self.log_sigma_head.bias, math.log(init_sigma))
        use_channels_last(self)

    def _actor(self, feature: torch.Tensor) -> Dict[str, torch.Tensor]:
        mu = self.mu_head(feature)
        if self.mu_bound:
            mu = self.mu_bound * torch.tanh(mu / self.mu_bound)
        log_sigma = self.log_sigma.expand_as(mu) if self.sigma_type == 'independent' else self.log_sigma_head(feature)
        return {'mu': mu, 'sigma': log_sigma.clamp(-20.0, 2.0).exp()}

    def compute_actor(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        extra: Dict[str, torch.Tensor] = {}
        out = self._actor(self._step(normalize_obs(self.obs_normalizer, obs), state, extra, critic=False)[0])
        out.update(extra)
        return out

    def compute_critic(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        obs = normalize_obs(self.obs_normalizer, obs)
        if self.core is not None:
            out: Dict[str, torch.Tensor] = {}
            out['value'] = self.value_head(self._step(obs, state, out)[1]).squeeze(-1)
            return out
        return {'value': self.value_head(self.critic_encoder(obs)).squeeze(-1)}

    def unroll(self, obs: Any, state: torch.Tensor, starts: torch.Tensor) -> Dict[str, torch.Tensor]:
        """The actor and ``V`` over a time-major sequence (the learner's recompute; recurrent models only), as
        ``acer_q``'s ``unroll``; ``'feature'`` ``(T*B, H)`` is the critic's core output, for ``sdn_q`` at chosen actions."""
        actor_feature, critic_feature, ends = self._unroll_features(obs, state, starts)
        out = self._actor(actor_feature)
        out['value'] = self.value_head(critic_feature).squeeze(-1)
        out['feature'] = critic_feature
        out['ends'] = ends
        return out

    def unroll_actor(self, obs: Any, state: torch.Tensor, starts: torch.Tensor) -> Dict[str, torch.Tensor]:
        """``unroll``'s ``mu`` and ``sigma`` alone, without the critic's core, ``V``, features and fragment-end states
        (an LSTM's one lane per column, ``RecurrentTrunk._unroll_actor_feature``): what the average policy network
        contributes to the trust region."""
        return self._actor(self._unroll_actor_feature(obs, state, starts))

    def compute_actor_critic(self, obs: torch.Tensor, actions: Optional[torch.Tensor] = None,
                             state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        obs = normalize_obs(self.obs_normalizer, obs)
        extra: Dict[str, torch.Tensor] = {}
        actor_feature, critic_feature = self._step(obs, state, extra)
        out = self._actor(actor_feature)
        out.update(extra)
        out['value'] = self.value_head(critic_feature).squeeze(-1)
        if actions is not None:
            out['q_value'] = self.sdn_q(critic_feature, out['value'], out['mu'], out['sigma'], actions)
        return out

    def sdn_q(self, critic_feature: torch.Tensor, value: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor,
              actions: torch.Tensor) -> torch.Tensor:
        """``Q~(x, a_k) = V(x) + A(x, a_k) - 1/n sum_i A(x, a'_i)`` for ``actions (N, K, d)``; returns ``(N, K)``."""
        if actions.dim() != 3 or actions.shape[0] != critic_feature.shape[0] or actions.shape[-1] != self.action_dim:
            raise ValueError(f"actions must be (N, K, {self.action_dim}) with N = {critic_feature.shape[0]}; "
                             f"got {tuple(actions.shape)}")
        n_actions = actions.shape[1]
        with torch.no_grad():
            samples = mu.unsqueeze(1) + sigma.unsqueeze(1) * torch.randn(
                (mu.shape[0], self.n_action_samples, self.action_dim), dtype=mu.dtype, device=mu.device)
        every = torch.cat([actions.to(critic_feature.dtype), samples], dim=1)  # (N, K + n, d)
        feature = critic_feature.unsqueeze(1).expand(-1, every.shape[1], -1)
        adv = self.advantage(torch.cat([feature, every], dim=-1)).squeeze(-1)
        return value.unsqueeze(-1) + adv[:, :n_actions] - adv[:, n_actions:].mean(-1, keepdim=True)

    def forward(self, obs: torch.Tensor, mode: str = 'compute_actor_critic',
                actions: Optional[torch.Tensor] = None, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        if mode == 'compute_actor_critic':
            return self.compute_actor_critic(obs, actions, state)
        if state is not None and mode in ('compute_actor', 'compute_critic'):
            return getattr(self, mode)(obs, state)
        return _dispatch(self, obs, mode)


def _dispatch(model: nn.Module, obs: torch.Tensor, mode: str) -> Dict[str, torch.Tensor]:
    if mode == 'compute_actor':
        return model.compute_actor(obs)
    if mode == 'compute_critic':
        return model.compute_critic(obs)
    if mode == 'compute_actor_critic':
        return model.compute_actor_critic(obs)
    raise ValueError(f"{type(model).__name__}.forward: unknown mode '{mode}'; "
                     f"use compute_actor, compute_critic or compute_actor_critic")
