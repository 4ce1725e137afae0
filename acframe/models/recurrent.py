"""The recurrent core (``policy.model.rnn``): an LSTM or GRU between the encoder and the heads.

State layout. One env's state is a ``(R, H)`` tensor: ``R = num_layers`` rows for a GRU (its ``h`` per layer),
``R = 2 * num_layers`` for an LSTM (``h`` per layer, then ``c`` per layer); a batch of envs is ``(B, R, H)``.
One tensor per batch keeps it plain data (checkpoints, segments) and lets a reset be one ``torch.where``.

Two ways through the core, with the same weights and the same numbers (to float rounding):

* ``step(x (B, D), state (B, R, H))``: one env step for every env (the collect and eval modes), with the fused
  cell functions (``torch.lstm_cell`` / ``torch.gru_cell`` on the module's weights: a third of ``nn.LSTM``'s cost
  for one step on a CPU);
* ``unroll(x (T, B, D), state (B, R, H), starts (T, B))``: a whole time-major sequence (the learner), with the
  state zeroed before every step ``t`` where ``starts[t, b]`` (an episode starts there). Without a start after
  the first step it is one ``nn.LSTM``/``nn.GRU`` call over the whole sequence. With starts inside, there is no
  Python loop per time step either: every column is cut into its episode fragments, which run side by side as
  the columns of one padded batch, one fused call per layer (``_unroll_padded``; on a CPU the LSTM's call is
  oneDNN's, which packed sequences do not get). Where the caller needs no fragment-end states (``ends=False``: PPO's
  gradient step, ACER's average policy network), an LSTM keeps one lane per column instead, its fragments back to
  back with a reset row before each episode start (``_unroll_lanes``): fewer than half the rows of the padded batch. A model can lay out its own
  inputs in those lanes (``lanes`` gives the layout, ``run_lanes`` the call): ``VAC.unroll`` gathers its
  observations, not its features, so no gather of a wide tensor is differentiated.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn

from .normalization import normalize_obs

RNN_TYPES = ('lstm', 'gru')
#: the pre-activation an LSTM's hold flag adds to a gate (``_unroll_padded``): sigmoid(+-1e18) is exactly 1 / 0, and
#: no trained gate's own pre-activation comes near it (float16: its largest finite value / 16)
HOLD_GATE = 1e18


class RecurrentCore(nn.Module):
    """An ``nn.LSTM``/``nn.GRU`` (time-major) of ``num_layers`` layers of ``hidden_size`` units on ``input_size`` features."""

    def __init__(self, input_size: int, type: str = 'lstm', hidden_size: int = 64, num_layers: int = 1) -> None:
        super().__init__()
        if type not in RNN_TYPES:
            raise ValueError(f"policy.model.rnn.type '{type}' is not one of {RNN_TYPES}")
        if int(hidden_size) < 1 or int(num_layers) < 1:
            raise ValueError(f"policy.model.rnn: hidden_size={hidden_size} and num_layers={num_layers} must be >= 1")
        self.kind = type
        self.hidden_size = int(hidden_size)
        self.num_layers = int(num_layers)
        rnn_cls = nn.LSTM if type == 'lstm' else nn.GRU
        self.rnn = rnn_cls(int(input_size), self.hidden_size, self.num_layers)
        self.state_rows = self.num_layers * (2 if type == 'lstm' else 1)
        # the sign of an LSTM's hold flag's weight (``_unroll_padded``) per gate (input, forget, cell, output)
        hold = torch.zeros(4, self.hidden_size) if type == 'lstm' else torch.zeros(0, self.hidden_size)
        if type == 'lstm':
            hold[0], hold[1], hold[3] = -1.0, 1.0, -1.0
        self.register_buffer('hold_weight', hold.reshape(-1, 1), persistent=False)
        # the sign of an LSTM's reset flag's weight (``_unroll_lanes``): input and forget gates 0, the state zeroed
        reset = torch.zeros(4, self.hidden_size) if type == 'lstm' else torch.zeros(0, self.hidden_size)
        if type == 'lstm':
            reset[0], reset[1], reset[3] = -1.0, -1.0, -1.0
        self.register_buffer('reset_weight', reset.reshape(-1, 1), persistent=False)
        self._reset_columns: dict = {}

    def initial_state(self, batch: int, device: torch.device = torch.device('cpu')) -> torch.Tensor:
        """Zeros ``(batch, R, H)``: the state at an episode's first step."""
        return torch.zeros(batch, self.state_rows, self.hidden_size, device=device)

    # ---- (B, R, H) <-> torch's (layers, B, H) ---------------------------------------------------------
    def _to_torch(self, state: torch.Tensor):
        layers = state.transpose(0, 1).contiguous()  # (R, B, H)
        if self.kind == 'lstm':
            return layers[:self.num_layers], layers[self.num_layers:]
        return layers

    def _from_torch(self, hx) -> torch.Tensor:
        layers = torch.cat(hx, 0) if self.kind == 'lstm' else hx
        return layers.transpose(0, 1)  # (B, R, H)

    # ---- forward ----------------------------------------------------------------------------------------
    def step(self, x: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """One step: ``x`` ``(B, D)``, ``state`` ``(B, R, H)`` → ``(output (B, H), next state (B, R, H))``.

        The fused cell of each layer (``torch.lstm_cell`` / ``torch.gru_cell``) on ``self.rnn``'s weights: the
        numbers of ``self.rnn`` over one step (to float rounding, about 1e-7), at a third of its cost.
        """
        weights, layers = self.rnn._flat_weights, self.num_layers  # (w_ih, w_hh, b_ih, b_hh) per layer
        rows = state.unbind(1)  # (B, H) views: h per layer (then c per layer)
        hs, cs = [], []
        for layer in range(layers):
            w_ih, w_hh, b_ih, b_hh = weights[4 * layer:4 * layer + 4]
            if self.kind == 'lstm':
                x, c = torch.lstm_cell(x, (rows[layer], rows[layers + layer]), w_ih, w_hh, b_ih, b_hh)
                cs.append(c)
            else:
                x = torch.gru_cell(x, rows[layer], w_ih, w_hh, b_ih, b_hh)
            hs.append(x)
        if self.state_rows == 1:  # one GRU layer: the state is the output, a view of it (no copy: 3 % of a collect step)
            return x, x.unsqueeze(1)
        return x, torch.stack(hs + cs, 1)

    def unroll(self, x: torch.Tensor, state: torch.Tensor, starts: torch.Tensor,
               ends: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """A time-major sequence from ``state``, the state zeroed before every step where an episode starts.

        Args:
            x: features ``(T, B, D)``.
            state: the state before step 0, ``(B, R, H)`` (already reset where step 0 starts an episode, or not:
                ``starts[0]`` zeroes it too).
            starts: ``(T, B)`` bool, True where step ``t`` is the first step of an episode.
            ends: whether the caller needs the fragment-end states; without them (a PPO gradient step) an LSTM's
                sequence with starts inside runs one lane per column (``_unroll_lanes``), not the padded fragments.

        Returns:
            ``(output (T, B, H), ends (T, B, R, H))``: ``ends[t, b]`` is the state after step ``t`` wherever step
            ``t`` is the last of its fragment (``t = T - 1`` or ``starts[t + 1, b]``: the state an episode that
            was cut at ``t`` continues from, e.g. to value its final observation), zeros elsewhere; None when
            ``ends=False``.
        """
        steps, batch = starts.shape
        starts = starts.to(torch.bool)
        if steps == 0:
            return (x.new_zeros(0, batch, self.hidden_size),
                    x.new_zeros(0, batch, self.state_rows, self.hidden_size) if ends else None)
        host = starts.cpu().numpy()  # (one copy from a GPU, not one per check)
        if not ends and self.kind == 'lstm' and host[1:].any():  # (``run_lanes`` zeroes the state where step 0 starts)
            return self._unroll_lanes(x, state, Lanes.of(host, starts)), None
        if host[0].any():
            state = torch.where(starts[0].view(batch, 1, 1), torch.zeros_like(state), state)
        if host[1:].any():
            return self._unroll_padded(x, state, starts, ends)
        out, hx = self.rnn(x, self._to_torch(state))  # no start after step 0: one call over the whole sequence
        if not ends:
            return out, None
        frag_ends = x.new_zeros(steps, batch, self.state_rows, self.hidden_size)
        frag_ends[-1] = self._from_torch(hx)
        return out, frag_ends

    def lanes(self, starts: torch.Tensor) -> Optional[Lanes]:
        """The one-lane-per-column layout (``Lanes``) of an LSTM's sequence whose ``starts`` ``(T, B)`` have an episode
        start after the first step; None for a GRU or a sequence without one (those take ``unroll``'s other paths).
        The caller gathers the rows of its inputs with ``lanes.source``, runs them with ``run_lanes`` and takes the
        steps' outputs back with ``lanes.real`` (``unroll``; ``VAC.unroll`` gathers its observations instead of its
        features, so no gather of a wide tensor is differentiated)."""
        if self.kind != 'lstm':
            return None
        host = starts.to(torch.bool).cpu().numpy()  # (one copy from a GPU, not one per check)
        if not host[1:].any():
            return None
        return Lanes.of(host, starts)

    def _unroll_lanes(self, x: torch.Tensor, state: torch.Tensor, lanes: Lanes) -> torch.Tensor:
        """``unroll``'s output ``(T, B, H)`` of an LSTM through one lane per column (``lanes``): the features
        gathered into the lanes, ``run_lanes``, the steps' outputs gathered back."""
        steps, batch = lanes.shape
        rows = x.reshape(steps * batch, -1).index_select(0, lanes.source)
        return self.run_lanes(rows, state, lanes).index_select(0, lanes.real).view(steps, batch, self.hidden_size)

    def run_lanes(self, rows: torch.Tensor, state: torch.Tensor, lanes: Lanes) -> torch.Tensor:
        """An LSTM over one lane per column: ``rows`` ``(lane * B, D)`` the features of the lanes' rows (time-major,
        gathered by ``lanes.source``), ``state`` ``(B, R, H)`` the state before step 0 → the output of every row
        ``(lane * B, H)`` (the steps' at ``lanes.real``; a reset or filler row's output means nothing).

        Each column keeps its one lane, its fragments back to back with a reset row inserted before every episode
        start, one fused call per layer over ``(T + most starts in a column, B)`` (the padded fragments run about
        twice the lanes). A reset row carries a flag in one extra input column (0 on every other row) whose weight
        (``reset_weight``, not learned) saturates the input, forget and output gates to exactly 0:
        ``c = 0·c + 0·g = 0`` and ``h = 0·tanh(0) = 0`` after it, whatever its other inputs: the zero state an
        episode starts from. Its output is dropped, and the saturated gates' derivatives are exactly 0 (as is
        ``tanh(0)``, the output gate's), so no gradient crosses it: every learned weight gets the gradient of the
        plain path. A column with fewer starts than the most ends in filler rows after its last step, which change
        nothing before them.
        """
        batch = lanes.shape[1]
        if lanes.first is not None:  # the state given is zeroed where step 0 starts an episode
            state = torch.where(lanes.first.view(batch, 1, 1), torch.zeros_like(state), state)
        flag = lanes.flag.to(rows)
        h0, c0 = self._to_torch(state)
        weights, hidden, inp = self.rnn._flat_weights, self.hidden_size, rows
        for layer in range(self.num_layers):
            w_ih, w_hh, b_ih, b_hh = weights[4 * layer:4 * layer + 4]
            params = [torch.cat([w_ih, self._reset_column(w_ih)], 1), w_hh, b_ih, b_hh]
            seq = torch.cat([inp, flag], 1).view(lanes.lane, batch, -1)
            with warnings.catch_warnings():  # cuDNN: the weights with the reset column are one new chunk
                warnings.filterwarnings('ignore', message='RNN module weights are not part of single')
                out, _, _ = torch.lstm(seq, [h0[layer:layer + 1], c0[layer:layer + 1]], params, True, 1, 0.0,
                                       self.training, False, False)
            inp = out.reshape(lanes.lane * batch, hidden)
        return inp

    def _reset_column(self, weight: torch.Tensor) -> torch.Tensor:
        """``reset_weight`` scaled to saturate the gates, in ``weight``'s dtype and device (kept between calls)."""
        key = (weight.dtype, weight.device)
        cached = self._reset_columns.get(key)
        if cached is None or cached[0] is not self.reset_weight:  # (a new buffer after ``.to()``: recompute)
            gate = min(HOLD_GATE, torch.finfo(weight.dtype).max / 16)
            cached = self._reset_columns[key] = (self.reset_weight, self.reset_weight.to(weight) * gate)
        return cached[1]

    def _unroll_padded(self, x: torch.Tensor, state: torch.Tensor, starts: torch.Tensor,
                       ends: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """``unroll`` with episode starts inside: every column is cut into its episode fragments, which run side by
        side as the columns of one padded batch ``(L, F, D)`` (``L`` the longest fragment), one fused call per layer.

        Each fragment's state after its last step (``ends``): ``h`` (of every layer) is read from the layer's output
        there. An LSTM's ``c`` is not an output: its padding rows carry a flag in one extra input column whose
        weight (``hold_weight``) saturates the gates (input and output gates 0, forget gate 1), so ``c`` passes the
        padding unchanged and the call's last ``c`` is the fragment's. The saturated gates' derivatives are 0, so
        the padding adds nothing to any gradient.
        """
        steps, batch = starts.shape
        bounds = starts.t().clone()  # (B, T): column-major order keeps a column's fragments together
        bounds[:, 0] = True
        flat_bounds = bounds.reshape(-1)
        frag = torch.cumsum(flat_bounds.long(), 0) - 1  # (B*T,) fragment of each step
        first = torch.nonzero(flat_bounds).squeeze(1)  # (F,) flat index of each fragment's first step
        n_frag = int(first.shape[0])
        lengths = torch.bincount(frag, minlength=n_frag)
        longest = int(lengths.max())
        pos = torch.arange(batch * steps, device=x.device) - first[frag]  # position of each step in its fragment
        padded_index = pos * n_frag + frag  # (B*T,) where each step sits in the (L, F) padded batch
        last_padded = (lengths - 1) * n_frag + torch.arange(n_frag, device=x.device)  # each fragment's last step
        feats = x.transpose(0, 1).reshape(batch * steps, -1)
        data = x.new_zeros(longest * n_frag, feats.shape[1]).index_copy(0, padded_index, feats)
        hold = x.new_ones(longest * n_frag, 1).index_fill(0, padded_index, 0.0) if self.kind == 'lstm' else None
        column_first = frag.view(batch, steps)[:, 0]  # each column's first fragment starts from ``state``
        init = x.new_zeros(n_frag, self.state_rows, self.hidden_size).index_copy(0, column_first, state)
        init = init.transpose(0, 1).contiguous()  # (R, F, H): cuDNN takes only contiguous initial states
        weights, layers, hidden = self.rnn._flat_weights, self.num_layers, self.hidden_size
        h_ends, c_ends = [], []
        inp = data
        for layer in range(layers):
            w_ih, w_hh, b_ih, b_hh = weights[4 * layer:4 * layer + 4]
            h0 = init[layer:layer + 1]
            if self.kind == 'lstm':  # the hold column: the padding keeps c
                gate = min(HOLD_GATE, torch.finfo(w_ih.dtype).max / 16)
                params = [torch.cat([w_ih, self.hold_weight.to(w_ih.dtype) * gate], 1), w_hh, b_ih, b_hh]
                seq = torch.cat([inp, hold], 1).view(longest, n_frag, -1)
                c0 = init[layers + layer:layers + layer + 1]
                with warnings.catch_warnings():  # cuDNN: the weights with the hold column are one new chunk
                    warnings.filterwarnings('ignore', message='RNN module weights are not part of single')
                    out, _, c_n = torch.lstm(seq, [h0, c0], params, True, 1, 0.0, self.training, False, False)
                c_ends.append(c_n[0])
            else:  # a GRU's state is its output: read at each fragment's last step, the padding is left to run
                with warnings.catch_warnings():  # cuDNN: one layer's weights are not the module's whole chunk
                    warnings.filterwarnings('ignore', message='RNN module weights are not part of single')
                    out, _ = torch.gru(inp.view(longest, n_frag, -1), h0, [w_ih, w_hh, b_ih, b_hh], True, 1, 0.0,
                                       self.training, False, False)
            inp = out.reshape(longest * n_frag, hidden)
            h_ends.append(inp.index_select(0, last_padded))
        out = inp.index_select(0, padded_index).view(batch, steps, hidden).transpose(0, 1)
        if not ends:
            return out, None
        frag_ends = torch.stack(h_ends + c_ends, 1)  # (F, R, H)
        last = first + lengths - 1  # flat (b*T + t) index of each fragment's last step
        all_ends = x.new_zeros(batch * steps, self.state_rows, hidden).index_copy(0, last, frag_ends)
        return out, all_ends.view(batch, steps, self.state_rows, hidden).transpose(0, 1)


class RecurrentTrunk:
    """A model's optional recurrent core(s) (``policy.model.rnn``) on its encoders' output, for ``VAC`` and ACER's
    models (a mixin of their ``nn.Module``): building them, one step (collect/eval) and a time-major unroll (the
    learner). With one body (``share_encoder=True``) actor and critic read one encoder and one core (``core``). With
    a body each (``share_encoder=False``) each has its own core (``core``, ``critic_core``) and the state is the actor
    core's ``R`` rows then the critic core's, ``(B, 2R, H)``; every step runs both, so the state stays whole."""

    core: Optional[RecurrentCore]
    critic_core: Optional[RecurrentCore]
    share_encoder: bool
    actor_encoder: nn.Module
    critic_encoder: nn.Module
    obs_normalizer: Optional[nn.Module]

    def _build_core(self, feature: int, rnn: Optional[Mapping[str, Any]]) -> int:
        """Build ``self.core`` (and ``self.critic_core`` with a body each) when ``rnn`` asks for one; returns the
        size of the features the heads read."""
        self.core = self.critic_core = None
        if rnn is None or rnn.get('type') is None:
            return feature
        if rnn.get('input_norm'):  # every path to a core reads the encoders: the norm is their last layer
            self.actor_encoder = nn.Sequential(self.actor_encoder, nn.LayerNorm(feature))
            self.critic_encoder = (self.actor_encoder if self.share_encoder
                                   else nn.Sequential(self.critic_encoder, nn.LayerNorm(feature)))
        core_args = (feature, rnn['type'], int(rnn.get('hidden_size', 64)), int(rnn.get('num_layers', 1)))
        self.core = RecurrentCore(*core_args)
        if not self.share_encoder:
            self.critic_core = RecurrentCore(*core_args)
        return self.core.hidden_size

    @property
    def recurrent(self) -> bool:
        """True when the model has a recurrent core (``rnn``): its forwards then carry a state."""
        return self.core is not None

    def initial_state(self, batch: int, device: Optional[torch.device] = None) -> torch.Tensor:
        """The recurrent state of ``batch`` envs at their episodes' first step, zeros ``(batch, R, H)`` (``2R`` rows
        with a critic core: the actor core's, then the critic core's)."""
        assert self.core is not None, "initial_state: the model has no recurrent core (policy.model.rnn)"
        device = device if device is not None else next(self.core.parameters()).device
        state = self.core.initial_state(batch, device)
        return state if self.critic_core is None else torch.cat([state, self.critic_core.initial_state(batch, device)], 1)

    def _split_state(self, state: torch.Tensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The actor core's rows and the critic core's (None with one core) of a state ``(B, R[+R], H)``."""
        if self.critic_core is None:
            return state, None
        rows = self.core.state_rows
        return state[:, :rows], state[:, rows:]

    def _step(self, obs: torch.Tensor, state: Optional[torch.Tensor], out: Dict[str, torch.Tensor],
              critic: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The actor's and the critic's features of (normalized) ``obs`` (one tensor twice with one body; the
        critic's only when ``critic`` or a core of its own must step): through one step of the core(s) when
        recurrent (the next state into ``out['state']``)."""
        actor = self.actor_encoder(obs)
        if self.core is None:
            return actor, (actor if self.share_encoder else self.critic_encoder(obs)) if critic else None
        if state is None:
            raise ValueError(f"a recurrent {type(self).__name__} (policy.model.rnn) needs its state: pass state=")
        actor_state, critic_state = self._split_state(state)
        actor, out['state'] = self.core.step(actor, actor_state)
        if self.critic_core is None:
            return actor, actor
        critic_feature, critic_next = self.critic_core.step(self.critic_encoder(obs), critic_state)
        out['state'] = torch.cat([out['state'], critic_next], 1)
        return actor, critic_feature

    def _unroll_features(self, obs: Any, state: torch.Tensor, starts: torch.Tensor,
                         ends: bool = True) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        """The actor's and the critic's core outputs ``(T*B, H)`` (one tensor twice with one core) over time-major
        flattened ``obs`` ``(T*B, ...)`` (normalized here) from ``state`` ``(B, R[+R], H)``, zeroed before every step
        where ``starts`` ``(T, B)``; and (with ``ends``) the fragment-end states ``(T*B, R[+R], H)``
        (``RecurrentCore.unroll``), else None."""
        obs, actor_state, critic_state = self._unroll_inputs(obs, state)
        actor, frag_ends = self._unroll_core(self.core, self.actor_encoder, obs, actor_state, starts, ends)
        critic = actor
        if self.critic_core is not None:
            critic, critic_ends = self._unroll_core(self.critic_core, self.critic_encoder, obs, critic_state, starts,
                                                    ends)
            frag_ends = None if frag_ends is None else torch.cat([frag_ends, critic_ends], 1)
        return actor, critic, frag_ends

    def _unroll_actor_feature(self, obs: Any, state: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """The actor's core output ``(T*B, H)`` alone, without running a critic core of its own (for a network that
        only acts, without a gradient: ACER's average policy network). No fragment-end states, so an LSTM's sequence
        with starts inside runs one lane per column (``RecurrentCore.unroll(..., ends=False)``): the padded path's
        outputs, equal to float rounding (bit for bit on the CPUs measured, docs/benchmarks.md); a GRU's are
        ``_unroll_features``' first output bit for bit."""
        obs, actor_state, _ = self._unroll_inputs(obs, state)
        return self._unroll_core(self.core, self.actor_encoder, obs, actor_state, starts, ends=False)[0]

    def _unroll_inputs(self, obs: Any, state: torch.Tensor) -> Tuple[Any, torch.Tensor, Optional[torch.Tensor]]:
        """``(normalized obs, the actor core's state, the critic core's state or None)``."""
        assert self.core is not None, "unroll: the model has no recurrent core (policy.model.rnn)"
        return (normalize_obs(self.obs_normalizer, obs),) + self._split_state(state)

    @staticmethod
    def _unroll_core(core: 'RecurrentCore', encoder: nn.Module, obs: Any, state: torch.Tensor, starts: torch.Tensor,
                     ends: bool) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """One core over the encoder's features: ``(output (T*B, H), fragment-end states (T*B, R, H) or None)``."""
        steps, batch = starts.shape
        out, frag_ends = core.unroll(encoder(obs).reshape(steps, batch, -1), state, starts, ends)
        if frag_ends is not None:
            frag_ends = frag_ends.reshape((steps * batch,) + tuple(frag_ends.shape[2:]))
        return out.reshape(steps * batch, -1), frag_ends


class Lanes:
    """Where each row of an LSTM's one-lane-per-column unroll (``RecurrentCore.run_lanes``) comes from, computed on
    the host from the episode starts ``(T, B)`` (a few small integer arrays: numpy's cost is a fraction of torch's
    per-op cost here). Step ``(t, b)`` sits at row ``(t + starts in column b after step 0 up to t) * B + b`` of the
    lanes ``(lane, B)``, ``lane = T +`` the most starts after step 0 in a column.

    * ``source`` ``(lane * B,)``: the step (time-major flat index) whose inputs each row takes; a reset row, or a
      filler row after a column's last step, takes the first step's (its input changes nothing, gets no gradient);
    * ``real`` ``(T * B,)``: the row of each step, time-major (to take the steps' outputs back);
    * ``flag`` ``(lane * B, 1)``: 1 on the reset row before each episode start after step 0, else 0;
    * ``first`` ``(B,)`` bool where step 0 starts an episode (the state given is zeroed there), or None.
    """

    __slots__ = ('shape', 'lane', 'source', 'real', 'flag', 'first')

    def __init__(self, shape: Tuple[int, int], lane: int, source: torch.Tensor, real: torch.Tensor,
                 flag: torch.Tensor, first: Optional[torch.Tensor]) -> None:
        self.shape, self.lane, self.source, self.real, self.flag, self.first = shape, lane, source, real, flag, first

    @classmethod
    def of(cls, host: np.ndarray, starts: torch.Tensor) -> 'Lanes':
        """The layout of ``host`` (the episode starts ``(T, B)`` bool, on the host; ``starts`` the same on the
        model's device, where the layout's tensors go)."""
        steps, batch = host.shape
        inner = host[1:]
        shift = np.zeros((steps, batch), dtype=np.int64)
        np.cumsum(inner, 0, out=shift[1:])
        lane = steps + int(shift[-1].max())
        real = ((np.arange(steps)[:, None] + shift) * batch + np.arange(batch)).reshape(-1)  # (T*B,) time-major
        source = np.zeros(lane * batch, dtype=np.int64)
        source[real] = np.arange(steps * batch)
        flag = np.zeros((lane * batch, 1), dtype=np.float32)
        flag[real[batch:][inner.reshape(-1)] - batch] = 1.0  # the reset row before each start
        device = starts.device
        return cls((steps, batch), lane, torch.from_numpy(source).to(device), torch.from_numpy(real).to(device),
                   torch.from_numpy(flag).to(device), starts[0].to(torch.bool) if host[0].any() else None)
