"""The recurrent core (``policy.model.rnn``): an LSTM or GRU between the encoder and the heads.

State layout. One env's state is a ``(R, H)`` tensor: ``R = num_layers`` rows for a GRU (its ``h`` per layer),
``R = 2 * num_layers`` for an LSTM (``h`` per layer, then ``c`` per layer); a batch of envs is ``(B, R, H)``.
One tensor per batch keeps it plain data (checkpoints, segments) and lets a reset be one ``torch.where``.

Two ways through the core, with the same weights and the same numbers (to float rounding):

* ``step(x (B, D), state (B, R, H))``: one env step for every env (the collect and eval modes);
* ``unroll(x (T, B, D), state (B, R, H), starts (T, B))``: a whole time-major sequence (the learner), with the
  state zeroed before every step ``t`` where ``starts[t, b]`` (an episode starts there). Without a start after
  the first step it is one cuDNN/ATen call over the whole sequence; otherwise every column is cut into its
  episode fragments, which run together as one packed sequence (``pack_padded_sequence``): still one call, no
  Python loop over time.
"""
from __future__ import annotations

from typing import Tuple

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

RNN_TYPES = ('lstm', 'gru')


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
        """One step: ``x`` ``(B, D)``, ``state`` ``(B, R, H)`` → ``(output (B, H), next state (B, R, H))``."""
        out, hx = self.rnn(x.unsqueeze(0), self._to_torch(state))
        return out[0], self._from_torch(hx)

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
        if not bool(starts[1:].any()):  # no episode starts inside: one call over the whole sequence
            out, hx = self.rnn(x, self._to_torch(state))
            ends = x.new_zeros(steps, batch, self.state_rows, self.hidden_size)
            ends[-1] = self._from_torch(hx)
            return out, ends
        # cut every column into its episode fragments and run them as one packed batch
        bounds = starts.t().clone()  # (B, T): column-major order keeps a column's fragments together
        bounds[:, 0] = True
        flat_bounds = bounds.reshape(-1)
        frag = torch.cumsum(flat_bounds.long(), 0) - 1  # (B*T,) fragment of each step
        n_frag = int(frag[-1]) + 1
        first = torch.nonzero(flat_bounds).squeeze(1)  # (F,) flat index of each fragment's first step
        lengths = torch.bincount(frag, minlength=n_frag)
        pos = torch.arange(batch * steps, device=x.device) - first[frag]
        feats = x.transpose(0, 1).reshape(batch * steps, -1)
        padded = x.new_zeros(n_frag, int(lengths.max()), feats.shape[1])
        padded[frag, pos] = feats
        init = x.new_zeros(n_frag, self.state_rows, self.hidden_size)
        column_first = frag.view(batch, steps)[:, 0]  # each column's first fragment starts from ``state``
        init[column_first] = state
        packed = pack_padded_sequence(padded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out_packed, hx = self.rnn(packed, self._to_torch(init))
        out_padded, _ = pad_packed_sequence(out_packed, batch_first=True, total_length=int(lengths.max()))
        out = out_padded[frag, pos].view(batch, steps, self.hidden_size).transpose(0, 1)
        final = self._from_torch(hx)  # (F, R, H): the state after each fragment's last step
        last = first + lengths - 1  # flat (b*T + t) index of each fragment's last step
        ends = x.new_zeros(batch * steps, self.state_rows, self.hidden_size)
        ends[last] = final
        return out, ends.view(batch, steps, self.state_rows, self.hidden_size).transpose(0, 1)
