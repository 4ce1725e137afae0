"""PettingZoo's two-player classic games as single-agent gymnasium envs against a fixed opponent (docs/masks.md).

``env.type='pettingzoo_classic'`` with ``env.env_id`` a module of ``pettingzoo.classic`` (``'connect_four_v3'``,
``'tictactoe_v3'``; any two-player turn-based game whose observations are PettingZoo's ``{'observation',
'action_mask'}`` Dict) builds ``PettingZooSingleAgent``: the agent plays one seat, the opponent the other, and the
opponent's moves happen inside ``step``. Needs the ``pettingzoo`` extra (``pip install -e '.[pettingzoo]'``).

* Observation: a Dict with ``'observation'`` (the game's observation from the agent's seat, flattened, float32) and
  ``'action_mask'`` (int8, 1 = legal: PettingZoo's own mask), so acframe's policies mask their logits with it.
* ``env.env_kwargs``: ``opponent`` — ``'random'`` (a uniformly random legal move, drawn from the env's seeded
  generator; default) or ``'first_legal'`` (the legal move of lowest index: a fixed, deterministic opponent);
  ``seat`` — ``'first'`` (default), ``'second'``, or ``'random'`` (drawn every episode); other keys go to the
  game's ``env(...)``.
* Reward: the agent's rewards of its move and of the opponent's reply (connect four: +1 win, -1 loss, 0 draw).
  The episode ends (terminated) when the game does. An illegal move raises (``ValueError``): with masks, a run that
  takes one fails. (PettingZoo's own rule, a loss, is not used: it would hide a masking bug.)

This module needs only numpy, gymnasium and pettingzoo (the peer bench imports it from another environment).
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np

OPPONENTS = ('random', 'first_legal')
SEATS = ('first', 'second', 'random')


def import_classic_game(env_id: str) -> Any:
    """The ``pettingzoo.classic.<env_id>`` module; one ``ConfigError`` line when pettingzoo or the game is missing."""
    from ..errors import ConfigError
    if importlib.util.find_spec('pettingzoo') is None:
        raise ConfigError(f"env.type 'pettingzoo_classic' (env.env_id '{env_id}') needs PettingZoo: "
                          f"pip install -e '.[pettingzoo]'")
    if not isinstance(env_id, str) or not re.fullmatch(r'[a-z][a-z0-9_]*_v\d+', env_id) or \
            importlib.util.find_spec(f'pettingzoo.classic.{env_id}') is None:
        raise ConfigError(f"env.env_id {env_id!r} is not a game of pettingzoo.classic; use e.g. 'connect_four_v3' or "
                          f"'tictactoe_v3'")
    return importlib.import_module(f'pettingzoo.classic.{env_id}')


class PettingZooSingleAgent(gym.Env):
    """A two-player PettingZoo AEC game seen from one seat, the other seat played by a fixed opponent."""

    metadata: Dict[str, Any] = {'render_modes': []}

    def __init__(self, aec_env: Any, opponent: str = 'random', seat: str = 'first') -> None:
        try:
            from ..errors import ConfigError
        except ImportError:  # (loaded as a file, outside acframe: the peer bench)
            ConfigError = ValueError  # noqa: N806
        if opponent not in OPPONENTS:
            raise ConfigError(f"env.env_kwargs.opponent = {opponent!r}: use one of {', '.join(OPPONENTS)}")
        if seat not in SEATS:
            raise ConfigError(f"env.env_kwargs.seat = {seat!r}: use one of {', '.join(SEATS)}")
        self.game, self.opponent, self.seat = aec_env, opponent, seat
        agents = list(aec_env.possible_agents)
        if len(agents) != 2:
            raise ConfigError(f"pettingzoo_classic: the game has {len(agents)} players; a single-agent view needs 2")
        self._agents = agents
        space = aec_env.observation_space(agents[0])
        if not isinstance(space, gym.spaces.Dict) or set(space.spaces) != {'observation', 'action_mask'}:
            raise ConfigError(f"pettingzoo_classic: the game's observations are {space}, not PettingZoo's "
                              f"{{'observation', 'action_mask'}} Dict")
        self.action_space = aec_env.action_space(agents[0])
        size = int(np.prod(space['observation'].shape))
        self.observation_space = gym.spaces.Dict({
            'observation': gym.spaces.Box(float(np.min(space['observation'].low)),
                                          float(np.max(space['observation'].high)), (size,), dtype=np.float32),
            'action_mask': gym.spaces.Box(0, 1, (int(self.action_space.n),), dtype=np.int8)})
        self.me = agents[0]
        self.illegal_actions = 0

    def _obs(self) -> Dict[str, np.ndarray]:
        raw = self.game.observe(self.me)
        return {'observation': np.asarray(raw['observation'], dtype=np.float32).reshape(-1),
                'action_mask': np.asarray(raw['action_mask'], dtype=np.int8)}

    def _over(self) -> bool:
        return bool(self.game.terminations[self.me] or self.game.truncations[self.me])

    def _opponent_moves(self) -> float:
        """The opponent plays until it is the agent's turn or the game is over; the agent's rewards meanwhile."""
        reward = 0.0
        while not self._over() and self.game.agent_selection != self.me:
            legal = np.flatnonzero(self.game.observe(self.game.agent_selection)['action_mask'])
            move = int(legal[0]) if self.opponent == 'first_legal' else int(self.np_random.choice(legal))
            self.game.step(move)
            reward += float(self.game.rewards[self.me])
        return reward

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
        super().reset(seed=seed)
        self.game.reset(seed=None if seed is None else int(seed))
        index = {'first': 0, 'second': 1}.get(self.seat, int(self.np_random.integers(2)))
        self.me = self._agents[index]
        self._opponent_moves()
        return self._obs(), {'seat': index}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]:
        move = int(action)
        mask = self.game.observe(self.me)['action_mask']
        if not 0 <= move < len(mask) or not mask[move]:
            self.illegal_actions += 1
            raise ValueError(f"illegal action {move} in {type(self.game.unwrapped).__name__}: its action_mask entry is 0 "
                             f"(legal: {np.flatnonzero(mask).tolist()})")
        self.game.step(move)
        reward = float(self.game.rewards[self.me])
        reward += self._opponent_moves()
        return self._obs(), reward, self._over(), False, {}


def make_pettingzoo_classic(env_cfg: Dict[str, Any], **overrides: Any) -> gym.Env:
    """ENV_REGISTRY factory (``env.type='pettingzoo_classic'``): ``pettingzoo.classic.<env.env_id>.env(...)`` against
    the opponent of ``env.env_kwargs`` (see the module docstring), under a time limit (``env.max_episode_steps``,
    default 1,000 agent moves; the games end before)."""
    from ..errors import ConfigError
    from .gym_env import kwargs_rejected

    kwargs = dict(env_cfg.get('env_kwargs') or {})
    kwargs.update(overrides)
    opponent, seat = kwargs.pop('opponent', 'random'), kwargs.pop('seat', 'first')
    module = import_classic_game(env_cfg.get('env_id'))
    try:
        game = module.env(**kwargs)
    except TypeError as exc:
        raise kwargs_rejected(f"pettingzoo.classic.{env_cfg.get('env_id')}", getattr(module, 'raw_env', module.env),
                              exc) from exc
    return gym.wrappers.TimeLimit(PettingZooSingleAgent(game, opponent, seat), env_cfg.get('max_episode_steps') or 1000)
