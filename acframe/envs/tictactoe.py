"""Tic-tac-toe against a fixed opponent: an env where illegal actions are common (docs/masks.md).

* ``toy_tictactoe`` (``TicTacToeEnv``, ``masked=True``): the agent (X) moves first on a 3x3 board against an
  opponent (O) that plays a uniformly random legal move (drawn from the env's seeded generator). The observation
  is a Dict: ``'board'`` (float32 ``(27,)``: per cell, one-hot empty / X / O) and ``'action_mask'`` (int8 ``(9,)``,
  1 on empty cells, the PettingZoo convention). Action: the cell, 0..8 (row-major). Reward +1 when X completes a
  line, -1 when O does, 0 for a draw; every episode ends (terminated) within 5 agent moves. After k moves of each
  side 2k of the 9 cells are taken: from the 3rd move on most actions are illegal. An illegal action raises
  (``ValueError``): with masks, a run that takes one fails.
* ``toy_tictactoe_nomask`` (``masked=False``): the same game without the mask: the observation is the board alone
  and an illegal action ends the episode (terminated) with reward ``illegal_reward`` (-1, as a loss).

Random play as X scores about +0.3 per episode against the random O; perfect play about +0.99 (O cannot always be
beaten: a draw is possible after some of its moves).

This module needs only numpy and gymnasium (the peer bench imports it from another environment).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np


def lines(size: int, win: int) -> np.ndarray:
    """``(L, win)`` cell indices (row-major) of every run of ``win`` cells in a row, column or diagonal of a
    ``size`` x ``size`` board."""
    out = []
    for r in range(size):
        for c in range(size):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + i * dr, c + i * dc) for i in range(win)]
                if all(0 <= rr < size and 0 <= cc < size for rr, cc in cells):
                    out.append([rr * size + cc for rr, cc in cells])
    return np.array(out, dtype=np.int64)


class TicTacToeEnv(gym.Env):
    """Tic-tac-toe as X (first to move) against a random legal O; see the module docstring."""

    metadata: Dict[str, Any] = {'render_modes': []}

    def __init__(self, masked: bool = True, illegal_reward: float = -1.0, size: int = 3, win: int = 3) -> None:
        if not (isinstance(size, int) and isinstance(win, int) and 2 <= win <= size <= 9):
            raise ValueError(f"size={size!r}, win={win!r}: need whole numbers with 2 <= win <= size <= 9")
        self.masked = bool(masked)
        self.illegal_reward = float(illegal_reward)
        self.size, self.win = size, win
        cells = size * size
        self._lines = lines(size, win)
        board = gym.spaces.Box(0.0, 1.0, (3 * cells,), dtype=np.float32)
        self.observation_space = (gym.spaces.Dict({'board': board, 'action_mask': gym.spaces.Box(0, 1, (cells,), dtype=np.int8)})
                                  if self.masked else board)
        self.action_space = gym.spaces.Discrete(cells)
        self._board = np.zeros(cells, dtype=np.int8)  # 0 empty, 1 X (the agent), 2 O
        self.illegal_actions = 0

    def _obs(self) -> Any:
        board = np.eye(3, dtype=np.float32)[self._board].reshape(-1)
        if not self.masked:
            return board
        return {'board': board, 'action_mask': (self._board == 0).astype(np.int8)}

    def action_masks(self) -> np.ndarray:
        """The legal actions (sb3-contrib's ``MaskablePPO`` reads this)."""
        return self._board == 0

    def _wins(self, player: int) -> bool:
        return bool((self._board[self._lines] == player).all(axis=1).any())

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
        super().reset(seed=seed)
        self._board[:] = 0
        return self._obs(), {}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]:
        cell = int(action)
        if not 0 <= cell < len(self._board) or self._board[cell] != 0:
            self.illegal_actions += 1
            if self.masked:
                raise ValueError(f"illegal action {cell} on board {self._board.tolist()}: the cell is taken (its "
                                 f"action_mask entry is 0)")
            return self._obs(), self.illegal_reward, True, False, {'illegal': True}
        self._board[cell] = 1
        if self._wins(1):
            return self._obs(), 1.0, True, False, {}
        empty = np.flatnonzero(self._board == 0)
        if len(empty) == 0:
            return self._obs(), 0.0, True, False, {}
        self._board[int(self.np_random.choice(empty))] = 2
        if self._wins(2):
            return self._obs(), -1.0, True, False, {}
        if not (self._board == 0).any():
            return self._obs(), 0.0, True, False, {}
        return self._obs(), 0.0, False, False, {}


def _make(env_cfg: Dict[str, Any], overrides: Dict[str, Any], masked: bool) -> gym.Env:
    from .gym_env import kwargs_rejected

    kwargs = dict(env_cfg.get('env_kwargs') or {})
    kwargs.update(overrides)
    kwargs['masked'] = masked
    try:
        env = TicTacToeEnv(**kwargs)
    except TypeError as exc:
        raise kwargs_rejected('TicTacToeEnv', TicTacToeEnv, exc) from exc
    return gym.wrappers.TimeLimit(env, env.size * env.size)  # (never reached: the board is full before)


def make_tictactoe(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of the masked ``TicTacToeEnv`` (``env.env_kwargs``: ``illegal_reward``)."""
    return _make(env_cfg, overrides, True)


def make_tictactoe_nomask(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory of the unmasked ``TicTacToeEnv``: an illegal action ends the episode with ``illegal_reward``."""
    return _make(env_cfg, overrides, False)
