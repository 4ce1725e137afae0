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
  Python loop per time step either: where few time steps hold a start (at most ``STRETCH_LIMIT``), one call per
  stretch between them, the state zeroed in between for the envs that start; else every column is cut into its
  episode fragments, which run together as one packed sequence (``PackedSequence``): one call. (On a CPU both cost
  about 4x the unbroken call for 32 steps of 8 envs with 9 start times: the packed LSTM's backward with varying
  batch sizes is slow, and every stretch costs a call; ``bench/bench_recurrent.py``.)
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch
import torch.nn as nn
from torch.nn.utils.rnn import PackedSequence

RNN_TYPES = ('lstm', 'gru')
#: ``unroll`` runs one call per stretch between the time steps that hold an episode start when there are at most
#: this many such steps, else one packed call over the episode fragments (measured crossover on a CPU: about 10)
STRETCH_LIMIT = 8


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

        The fused cell of each layer on ``self.rnn``'s weights: the numbers of ``self.rnn`` over one step (to float
        rounding, about 1e-7), at a third of its cost.
        """
        rnn, layers = self.rnn, self.num_layers
        rows = []
        for layer in range(layers):
            weights = (getattr(rnn, f'weight_ih_l{layer}'), getattr(rnn, f'weight_hh_l{layer}'),
                       getattr(rnn, f'bias_ih_l{layer}'), getattr(rnn, f'bias_hh_l{layer}'))
            if self.kind == 'lstm':
                h, c = torch.lstm_cell(x, (state[:, layer], state[:, layers + layer]), *weights)
                rows.append((h, c))
            else:
                h = torch.gru_cell(x, state[:, layer], *weights)
                rows.append((h,))
            x = h
        if self.kind == 'lstm':
            return x, torch.stack([r[0] for r in rows] + [r[1] for r in rows], 1)
        return x, torch.stack([r[0] for r in rows], 1)

    def unroll(self, x: torch.Tensor, state: torch.Tensor, starts: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """A time-major sequence from ``state``, the state zeroed before every step where an episode starts.

        Args:
            x: features ``(T, B, D)``.
            state: the state before step 0, ``(B, R, H)`` (already reset where step 0 starts an episode, or not:
                ``starts[0]`` zeroes it too).
            starts: ``(T, B)`` bool, True where step ``t`` is the first step of an episode.

        Returns:
            ``(output (T, B, H), ends (T, B, R, H))``: ``ends[t, b]`` is the state after step ``t`` wherever step
            ``t`` is the last of its fragment (``t = T - 1`` or ``starts[t + 1, b]``: the state an episode that
            was cut at ``t`` continues from, e.g. to value its final observation), zeros elsewhere.
        """
        steps, batch = starts.shape
        starts = starts.to(torch.bool)
        state = torch.where(starts[0].view(batch, 1, 1), torch.zeros_like(state), state)
        if steps == 0:
            return x.new_zeros(0, batch, self.hidden_size), x.new_zeros(0, batch, self.state_rows, self.hidden_size)
        times = torch.nonzero(starts[1:].any(1)).squeeze(1).add(1).tolist()  # steps where some env starts
        if len(times) <= STRETCH_LIMIT:
            return self._unroll_stretches(x, state, starts, times)
        return self._unroll_packed(x, state, starts)

    def _unroll_stretches(self, x: torch.Tensor, state: torch.Tensor, starts: torch.Tensor,
                          times: List[int]) -> Tuple[torch.Tensor, torch.Tensor]:
        """``unroll`` as one call per stretch between the ``times`` where some env starts an episode."""
        steps, batch = starts.shape
        bounds = [0] + times + [steps]
        hx = self._to_torch(state)
        outs: List[torch.Tensor] = []
        ends: List[Optional[torch.Tensor]] = [None] * steps
        for begin, end in zip(bounds[:-1], bounds[1:]):
            if begin > 0:  # the envs that start here: their fragment ended at begin - 1, their state is zeroed
                mask = starts[begin].view(batch, 1, 1)
                current = self._from_torch(hx)
                ends[begin - 1] = torch.where(mask, current, torch.zeros_like(current))
                hx = self._to_torch(torch.where(mask, torch.zeros_like(current), current))
            out, hx = self.rnn(x[begin:end], hx)
            outs.append(out)
        ends[-1] = self._from_torch(hx)
        zero = x.new_zeros(batch, self.state_rows, self.hidden_size)
        return torch.cat(outs), torch.stack([zero if e is None else e for e in ends])

    def _unroll_packed(self, x: torch.Tensor, state: torch.Tensor,
                       starts: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """``unroll`` as one packed call over every column's episode fragments."""
        steps, batch = starts.shape
        bounds = starts.t().clone()  # (B, T): column-major order keeps a column's fragments together
        bounds[:, 0] = True
        flat_bounds = bounds.reshape(-1)
        frag = torch.cumsum(flat_bounds.long(), 0) - 1  # (B*T,) fragment of each step
        first = torch.nonzero(flat_bounds).squeeze(1)  # (F,) flat index of each fragment's first step
        n_frag = int(first.shape[0])
        lengths = torch.bincount(frag, minlength=n_frag)
        pos = torch.arange(batch * steps, device=x.device) - first[frag]  # position of each step in its fragment
        # PackedSequence's layout: position-major, fragments by decreasing length at each position
        order = torch.argsort(lengths, descending=True, stable=True)
        rank = torch.empty_like(order)
        rank[order] = torch.arange(n_frag, device=x.device)
        batch_sizes = torch.bincount(pos)  # fragments still running at each position
        offsets = torch.cumsum(batch_sizes, 0) - batch_sizes
        packed_index = offsets[pos] + rank[frag]  # (B*T,) where each step sits in the packed data
        feats = x.transpose(0, 1).reshape(batch * steps, -1)
        data = feats.index_select(0, torch.argsort(packed_index))
        column_first = frag.view(batch, steps)[:, 0]  # each column's first fragment starts from ``state``
        init = x.new_zeros(n_frag, self.state_rows, self.hidden_size).index_copy(0, column_first, state)
        packed = PackedSequence(data, batch_sizes.cpu(), order, rank)
        out, hx = self.rnn(packed, self._to_torch(init))
        out = out.data.index_select(0, packed_index).view(batch, steps, self.hidden_size).transpose(0, 1)
        last = first + lengths - 1  # flat (b*T + t) index of each fragment's last step
        ends = x.new_zeros(batch * steps, self.state_rows, self.hidden_size).index_copy(0, last, self._from_torch(hx))
        return out, ends.view(batch, steps, self.state_rows, self.hidden_size).transpose(0, 1)
