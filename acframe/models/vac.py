"""VAC: the value actor-critic model (registered as ``vac``)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import torch
import torch.nn as nn

from ..data.tree import is_leaf, tree_map
from ..registry import MODEL_REGISTRY
from .common import init_orthogonal, mlp
from .encoders import build_encoder, check_layer_sizes, use_channels_last
from .normalization import ObsNormalizer, normalize_obs, obs_normalizer
from .recurrent import RecurrentTrunk
from .sde import sde_std

ACTION_SPACES = ('discrete', 'continuous', 'multi_discrete')


@MODEL_REGISTRY.register('vac')
class VAC(RecurrentTrunk, nn.Module):
    """Encoder (MLP, Nature CNN or IMPALA ResNet) → actor head (categorical logits or Gaussian mu/sigma) and value head.

    Args:
        obs_shape: observation size (vector observations), image shape ``(C, H, W)`` (uint8 images are scaled
            to [0, 1] inside the encoder), or ``{key: shape}`` of a Dict observation mixing images and vectors.
        action_shape: number of actions (discrete), action dims (continuous), or the ``nvec`` list (multi_discrete).
        action_space: ``'discrete'``, ``'continuous'`` or ``'multi_discrete'``.
        encoder: ``'mlp'`` (vectors), ``'nature_cnn'`` or ``'impala_resnet'`` (images); see ``models.encoders``.
        encoder_hidden_size_list: hidden sizes of the encoder MLP (after the conv layers of an image encoder).
        encoder_channels: channels of the conv layers of an image encoder (None: the paper's).
        image_layout: how 3-D image observations are read, ``'auto'``, ``'chw'`` or ``'hwc'``, or a dict of them by
            image key of a Dict observation (``models.encoders.image_layout``: ``'auto'`` takes ``(H, W, C)`` for
            ``C <= 4`` and refuses ``(64, 64, 6)``-like shapes rather than guess).
        vector_encoder: Dict observations: what their vector keys (concatenated) go through, ``'mlp'`` or ``'identity'``.
        vector_hidden_size_list: Dict observations: hidden sizes of the ``'mlp'`` vector encoder.
        share_encoder: one encoder for actor and critic (True) or separate actor and critic bodies (False).
        actor_head_hidden_size / critic_head_hidden_size: a hidden layer in each head (0: a linear head).
        actor_head_layer_num / critic_head_layer_num: how many such hidden layers each head has (DI-engine's
            ``*_head_layer_num``; 1 by default; unused with a linear head).
        activation: ``'tanh'`` or ``'relu'``.
        sigma_type: ``'independent'`` (a learned log-std per dim) or ``'conditioned'`` (a head on the encoder).
        init_sigma: initial std of the Gaussian.
        mu_bound: when > 0, the Gaussian mean is squashed into (-mu_bound, mu_bound) by
            ``mu_bound * tanh(x / mu_bound)`` (set it to the action bound: an unbounded mean drifts past the
            bounds the env manager clips to, and the deterministic policy degenerates to constant extreme actions).
        orthogonal_init: orthogonal weight init (gain sqrt(2) body, 0.01 policy head, 1 value head).
        obs_norm: normalize observations by their running mean and std (``self.obs_normalizer``, an
            ``ObsNormalizer`` whose buffers are part of the state_dict; the learn mode updates it); of a Dict
            observation, its vector keys only.
        obs_norm_clip: normalized observations are clipped to ``[-obs_norm_clip, obs_norm_clip]``.
        use_sde: continuous actions explore with gSDE (``models.sde``): the std is state-dependent,
            ``sigma = sde_std(phi(s), sde_log_std)`` with ``phi`` the actor's last hidden features (without
            gradient) and ``sde_log_std`` an ``(L, D)`` parameter initialised to ``log(init_sigma)``; the actor's
            output adds ``'sde_latent'`` (``phi(s)``), from which the collect mode draws the noise. Replaces sigma_type.
        rnn: a recurrent core between the encoder and the heads, ``dict(type='lstm'|'gru', hidden_size,
            num_layers)`` (``models.recurrent``; other keys, e.g. the learner's ``seq_len``, are not the model's);
            None or ``type=None``: feed-forward. The ``compute_*`` methods then take and return the state
            (``state=`` in, ``'state'`` out) and ``unroll`` runs a sequence; see docs/recurrent.md. With
            ``share_encoder=False`` the actor and the critic each have their own encoder and core (``core`` and
            ``critic_core``, sb3-contrib RecurrentPPO's default): the state is the actor core's ``R`` rows then the
            critic core's, ``(B, 2R, H)``, and every ``compute_*`` steps both cores, so the state stays whole.

    ``forward(obs, mode)`` with mode ``'compute_actor'`` returns ``{'logit'}`` or ``{'mu', 'sigma'}``;
    ``'compute_critic'`` returns ``{'value'}`` of shape ``(B,)``; ``'compute_actor_critic'`` returns both.
    """

    def __init__(
        self,
        obs_shape: Union[int, Sequence[int], Mapping[str, Any]],
        action_shape: Union[int, Sequence[int]],
        action_space: str = 'discrete',
        encoder_hidden_size_list: Sequence[int] = (64, 64),
        share_encoder: bool = True,
        actor_head_hidden_size: int = 0,
        critic_head_hidden_size: int = 0,
        actor_head_layer_num: int = 1,
        critic_head_layer_num: int = 1,
        activation: str = 'tanh',
        sigma_type: str = 'independent',
        init_sigma: float = 1.0,
        orthogonal_init: bool = True,
        mu_bound: float = 0.0,
        encoder: str = 'mlp',
        encoder_channels: Optional[Sequence[int]] = None,
        obs_norm: bool = False,
        obs_norm_clip: float = 10.0,
        vector_encoder: str = 'mlp',
        vector_hidden_size_list: Sequence[int] = (64,),
        use_sde: bool = False,
        rnn: Optional[Mapping[str, Any]] = None,
        image_layout: Union[str, Mapping[str, str]] = 'auto',
    ) -> None:
        super().__init__()
        if action_space not in ACTION_SPACES:
            raise ValueError(f"policy.model.action_space '{action_space}' is not one of {ACTION_SPACES}")
        if sigma_type not in ('independent', 'conditioned'):
            raise ValueError(f"policy.model.sigma_type '{sigma_type}' is not 'independent' or 'conditioned'")
        self.action_space = action_space
        self.share_encoder = share_encoder
        if action_space == 'multi_discrete':
            self.nvec: List[int] = [int(n) for n in action_shape]
            out_size = sum(self.nvec)
        else:
            self.nvec = []
            out_size = int(action_shape if isinstance(action_shape, int) else math.prod(action_shape))
        check_layer_sizes(encoder_hidden_size_list, 'encoder_hidden_size_list')  # (list() of an int: a TypeError)
        hidden = list(encoder_hidden_size_list)
        self.obs_normalizer: Optional[ObsNormalizer] = obs_normalizer(obs_shape, obs_norm_clip) if obs_norm else None
        encoder_args = (obs_shape, encoder, hidden, activation, encoder_channels, vector_encoder, vector_hidden_size_list,
                        image_layout)
        self.actor_encoder, feature = build_encoder(*encoder_args)
        self.critic_encoder = self.actor_encoder if share_encoder else build_encoder(*encoder_args)[0]
        feature = self._build_core(feature, rnn)  # the heads read the core's output when recurrent
        # heads: [hidden layer +] linear output; the hidden part is kept apart for the conditioned sigma head
        for name, width in (('actor_head_hidden_size', actor_head_hidden_size),
                            ('critic_head_hidden_size', critic_head_hidden_size)):
            if isinstance(width, bool) or not isinstance(width, int) or width < 0:
                raise ValueError(f"policy.model.{name} = {width!r} must be a whole number >= 0 (the width of the "
                                 f"head's hidden layers; 0: a linear head)")
        for name, layers in (('actor_head_layer_num', actor_head_layer_num), ('critic_head_layer_num', critic_head_layer_num)):
            if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:
                raise ValueError(f"policy.model.{name} = {layers!r} must be a whole number >= 1 (the hidden layers of "
                                 f"the head; a linear head is *_head_hidden_size=0)")
            width = name.replace('layer_num', 'hidden_size')
            if layers > 1 and not {'actor': actor_head_hidden_size, 'critic': critic_head_hidden_size}[name[:name.index('_')]]:
                raise ValueError(f"policy.model.{name} = {layers} needs policy.model.{width} > 0 (the width of those "
                                 f"hidden layers; {width}=0 is a linear head, with no hidden layer)")
        self.actor_hidden = mlp(feature, [actor_head_hidden_size] * actor_head_layer_num if actor_head_hidden_size else [],
                                activation)
        self.actor_out = nn.Linear(actor_head_hidden_size or feature, out_size)
        self.critic_head = mlp(feature, [critic_head_hidden_size] * critic_head_layer_num if critic_head_hidden_size else [],
                               activation)
        self.critic_head.append(nn.Linear(critic_head_hidden_size or feature, 1))
        if not actor_head_hidden_size:  # skip an empty module call per forward (the collector's hot path)
            self.actor_hidden = nn.Identity()
        self.sigma_type = sigma_type
        self.mu_bound = float(mu_bound)
        self.use_sde = bool(use_sde)
        if self.use_sde and action_space != 'continuous':
            raise ValueError(f"policy.model.use_sde explores continuous actions (gSDE); this env has {action_space} "
                             f"actions: set use_sde=False")
        if action_space == 'continuous':
            if self.use_sde:
                self.sde_log_std = nn.Parameter(torch.full((actor_head_hidden_size or feature, out_size),
                                                           math.log(init_sigma)))
            elif sigma_type == 'independent':
                self.log_sigma = nn.Parameter(torch.full((out_size,), math.log(init_sigma)))
            else:
                self.log_sigma_head = nn.Linear(actor_head_hidden_size or feature, out_size)
                nn.init.zeros_(self.log_sigma_head.weight)
                nn.init.constant_(self.log_sigma_head.bias, math.log(init_sigma))
        if orthogonal_init:
            init_orthogonal(self.actor_encoder, math.sqrt(2))
            if not share_encoder:
                init_orthogonal(self.critic_encoder, math.sqrt(2))
            init_orthogonal(self.actor_hidden, math.sqrt(2))
            init_orthogonal(self.actor_out, 0.01)
            init_orthogonal(self.critic_head, math.sqrt(2), last_gain=1.0)
        use_channels_last(self)

    def compute_actor(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        obs = normalize_obs(self.obs_normalizer, obs)
        if self.core is None:
            return self._actor_from_feature(self.actor_encoder(obs))
        extra: Dict[str, torch.Tensor] = {}
        out = self._actor_from_feature(self._step(obs, state, extra, critic=False)[0])
        out.update(extra)
        return out

    def _actor_from_feature(self, feature: torch.Tensor) -> Dict[str, torch.Tensor]:
        hidden = self.actor_hidden(feature)
        if self.action_space != 'continuous':
            return {'logit': self.actor_out(hidden)}
        mu = self.actor_out(hidden)
        if self.mu_bound > 0:
            mu = self.mu_bound * torch.tanh(mu / self.mu_bound)
        if self.use_sde:
            latent = hidden.detach()
            return {'mu': mu, 'sigma': sde_std(latent, self.sde_log_std), 'sde_latent': latent}
        if self.sigma_type == 'independent':
            sigma = self.log_sigma.clamp(-20.0, 2.0).exp().expand_as(mu)
        else:
            sigma = self.log_sigma_head(hidden).clamp(-20.0, 2.0).exp()
        return {'mu': mu, 'sigma': sigma}

    def compute_critic(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        obs = normalize_obs(self.obs_normalizer, obs)
        if self.core is None:
            return {'value': self.critic_head(self.critic_encoder(obs)).squeeze(-1)}
        out: Dict[str, torch.Tensor] = {}
        out['value'] = self.critic_head(self._step(obs, state, out)[1]).squeeze(-1)
        return out

    def compute_actor_critic(self, obs: torch.Tensor, state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        obs = normalize_obs(self.obs_normalizer, obs)
        extra: Dict[str, torch.Tensor] = {}  # (a recurrent model's next state)
        actor_feature, critic_feature = self._step(obs, state, extra)
        out = self._actor_from_feature(actor_feature)
        out['value'] = self.critic_head(critic_feature).squeeze(-1)
        out.update(extra)
        return out

    def unroll(self, obs: Any, state: torch.Tensor, starts: torch.Tensor, ends: bool = True) -> Dict[str, torch.Tensor]:
        """Actor and critic over a time-major sequence (the learner's recompute; recurrent models only).

        Args:
            obs: observations ``(T*B, *obs_shape)``, time-major flattened (a dict per key for Dict observations).
            state: the state before step 0, ``(B, R, H)`` (``(B, 2R, H)`` with a critic core: the actor's rows first).
            starts: ``(T, B)`` bool, True where an episode starts (the state is zeroed before that step).
            ends: whether to return ``'ends'`` (False: a faster unroll where the caller needs only the outputs).

        Returns:
            ``compute_actor_critic``'s outputs ``(T*B, ...)`` and (with ``ends``) ``'ends'`` ``(T*B, R[+R], H)``: the state
            after every step that ends a fragment (``RecurrentCore.unroll``), zeros elsewhere.
        """
        assert self.core is not None, "unroll: the model has no recurrent core (policy.model.rnn)"
        lanes = None if ends else self.core.lanes(starts)
        if lanes is not None:  # an LSTM with episode starts inside: one lane per column (``RecurrentCore.run_lanes``)
            # the observations are gathered into the lanes (no gradient), the encoder and the heads run on the lanes'
            # rows, and only the heads' outputs are taken back: no gather of the features is differentiated
            actor_state, critic_state = self._split_state(state)
            take = lanes.source
            rows = obs.index_select(0, take) if is_leaf(obs) else tree_map(lambda x: x.index_select(0, take), obs)
            rows = normalize_obs(self.obs_normalizer, rows)
            feature = self.core.run_lanes(self.actor_encoder(rows), actor_state, lanes)
            critic_feature = feature if self.critic_core is None else \
                self.critic_core.run_lanes(self.critic_encoder(rows), critic_state, lanes)
            out = self._actor_from_feature(feature)
            out['value'] = self.critic_head(critic_feature).squeeze(-1)
            return {k: v.index_select(0, lanes.real) for k, v in out.items()}
        feature, critic_feature, frag_ends = self._unroll_features(obs, state, starts, ends)
        out = self._actor_from_feature(feature)
        out['value'] = self.critic_head(critic_feature).squeeze(-1)
        if frag_ends is not None:
            out['ends'] = frag_ends
        return out

    def forward(self, obs: torch.Tensor, mode: str = 'compute_actor_critic',
                state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        # the state only when given: a subclass may override compute_* with the feed-forward signature (obs only)
        args = (obs,) if state is None else (obs, state)
        if mode == 'compute_actor':
            return self.compute_actor(*args)
        if mode == 'compute_critic':
            return self.compute_critic(*args)
        if mode == 'compute_actor_critic':
            return self.compute_actor_critic(*args)
        raise ValueError(f"VAC.forward: unknown mode '{mode}'; use compute_actor, compute_critic or compute_actor_critic")
