"""The batched inference server of the local backend (``parallel.inference='server'``).

Sample Factory's and SEED RL's design: the actors step their envs but run no network. Each actor writes its
observations ``(B, ...)`` into its own slot of shared memory and wakes the server; the server takes every slot
that waits, runs the collect mode **once** on the stacked batch ``(k * B, ...)`` (on the GPU with ``policy.cuda``,
else on the CPU) and writes each actor's outputs (action, logits, value, ...) back into its slot, with the weights
version that acted. No array is pickled per step: the slots, their headers and the signals (one semaphore the actors
release, one per actor the server releases) are allocated by the learner before any child starts, so a restarted
actor or server finds them where its predecessor left them.

Weights and the lag bound are the per-actor path's (``BoundedLagCollectMode``): the server copies the newest weights
from ``SharedWeights`` when an actor starting a segment is in the batch and a newer version exists, and before acting
with weights more than ``parallel.max_policy_lag`` versions behind; every step is stamped with the version that chose
its action, and each actor reports its segment's largest acting lag, so the learner's off-policy correction and
``max_acting_lag`` stay right.

Sampling uses the server's torch RNG, seeded as actor 0's (``actor_seed(cfg, 0, incarnation)``): with one actor a
segment equals the per-actor path's, action for action; with more, which actors share a batch depends on timing, so
the actions are other draws from the same distributions (the logits and values are the same functions of the
observations).

Nothing waits forever: an actor waits on its reply in slices of ``_POLL_S`` and leaves when the run stops; the server
is a child like the others (its pipe, process sentinel and heartbeat are watched by the learner, ``LocalBackend``): a
server that dies or stops beating is restarted with a warning (counted in ``parallel.max_restarts``) and serves the
requests still waiting; an actor that dies mid-request leaves nothing locked (requests are matched by sequence
numbers, so a stale reply is never taken for a fresh one).

Recurrent models (``policy.model.rnn``): SEED RL's way, the server carries one state per (actor, env) slot, in shared
memory next to the observations (``Slots.state``, written only by the server, so a restarted server finds the states
where its predecessor left them). The states are double-buffered by the request's parity: request ``n`` acts from
buffer ``n % 2`` and leaves the next states in the other, so a server that dies between writing them and replying
serves the request again from the states it acted from. Episode starts stay the actor's business, as with per-actor
inference: the collector's ``reset()`` and ``episode_start(env_ids)`` mark the envs, and the actor sends those marks
with its next request (``Slots.starts`` ``(actors, B)``); the server zeroes the marked envs' states, acts from them
through the collect mode's own ``load_state_dict`` / ``state_dict`` (the same code path as per-actor inference) and
writes the next states back. The reply carries ``rnn_state`` (the state each env acted from) and ``episode_start``
like every other output, so the segments, and the learner's recomputation from their first state, are the per-actor
path's. A restarted actor, and every actor after ``--resume``, starts its envs and states afresh (its collector's
``reset`` marks every env), as per-actor inference does.

gSDE (``policy.model.use_sde``) likewise: the server keeps each (actor, env)'s exploration matrix in shared memory
(``Slots.sde`` ``(actors, B, L, D)``) and each actor's redraw schedule in its header (env steps since the draw):
an actor's matrices are redrawn, from the server's RNG and current ``log_std``, every
``policy.collect.sde_sample_freq`` of its own steps and at its first step after its collector reset the envs, as
its own ``StateDependentNoise`` would; the batch then acts from the matrices through the collect mode's
``load_state_dict``.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from easydict import EasyDict

from ...errors import ConfigError
from ...models.sde import draw_exploration_matrices
from ...signals import held_while_a_child_starts
from .messages import VERSION_KEY

#: seconds between two looks at the stop flag while an actor waits on its reply or the server on requests
_POLL_S = 0.1
#: header columns of a slot: request sequence (actor), reply sequence (server), version that acted, its acting lag,
#: 1 when the request is the first step of a segment (the newest weights are wanted), 1 when the actor's collector
#: reset its envs since its last request (gSDE redraws), its steps since its gSDE matrices were drawn (server)
_REQ, _REP, _VER, _LAG, _FRESH, _REDRAW, _SDE_STEPS = range(7)
ROLE = 'inference server'


def check_inference(cfg: Any, backend: str) -> None:
    """Refuse ``parallel.inference='server'`` where it cannot work, in one line (``ConfigError``)."""
    if cfg.parallel.get('inference', 'actor') != 'server':
        return
    if backend != 'local':
        raise ConfigError(f"parallel.inference='server' runs one inference server per machine with the local backend; "
                          f"the {backend} backend runs each actor's own forward pass: set parallel.inference='actor'")


def _example_obs(space: Any, envs: int) -> Any:
    """A batch of ``envs`` observations of ``space`` (ones: a valid action mask), in the storage dtype."""
    from ...envs.obs import obs_storage_dtype

    spaces = getattr(space, 'spaces', None)
    if isinstance(spaces, dict):
        return {k: _example_obs(v, envs) for k, v in spaces.items()}
    return np.ones((envs,) + tuple(space.shape), dtype=obs_storage_dtype(space.dtype))


def _shared(shape: Tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype).share_memory_()


@dataclass
class Slots:
    """The shared memory of the actors' requests and the server's replies (allocated by the learner)."""

    obs: Any  # (actors, B, ...) tensor, or a dict of them for a Dict observation
    outputs: Dict[str, torch.Tensor]  # key -> (actors, B, ...)
    header: torch.Tensor  # (actors, 7) int64
    stats: torch.Tensor  # (2,) int64: batches run, requests served
    requests: Any  # semaphore: an actor released it after writing a request
    replies: List[Any]  # one semaphore per actor: the server released it after writing the reply
    spaces: Tuple[Any, Any]  # (observation space, action space) the policy is built for
    state: Optional[torch.Tensor] = None  # a recurrent model's (actors, 2, B, R, H): by request parity (next_states)
    starts: Optional[torch.Tensor] = None  # (actors, B) bool, sent with a request: the envs that start an episode
    sde: Optional[torch.Tensor] = None  # gSDE's (actors, B, L, D): each env's exploration matrix


def _policy(cfg: Any, spaces: Tuple[Any, Any]) -> Any:
    from ...policy import create_policy
    return create_policy(cfg, *spaces, enable_field=('collect',))


def allocate(cfg: Any, ctx: Any) -> Slots:
    """The slots of ``parallel.actor_num`` actors of ``env.collector_env_num`` envs each: the outputs' keys, shapes and
    dtypes are those of one collect-mode forward pass on the CPU (under a forked RNG: the learner's stream is left as
    it is)."""
    from ...envs import make_env_manager
    from ...errors import call_user_code
    from ...worker.collector import check_action_output
    from .roles import worker_config

    actors, envs = int(cfg.parallel.actor_num), int(cfg.env.collector_env_num)
    cpu_cfg = worker_config(cfg)
    with make_env_manager(cpu_cfg, 'collector', 1, cfg.seed) as probe:
        spaces = (probe.observation_space, probe.action_space)
    example = _example_obs(spaces[0], envs)
    with torch.random.fork_rng(devices=[]), torch.inference_mode():
        policy = _policy(cpu_cfg, spaces)
        mode = policy.collect_mode
        out = call_user_code("the policy's _forward_collect", mode.forward,  # (a user's model raising: one line)
                             {k: torch.from_numpy(v) for k, v in example.items()} if isinstance(example, dict)
                             else torch.from_numpy(example))
    check_action_output(out, '_forward_collect', envs, action_space=spaces[1])  # (the layout below reads it)
    if isinstance(example, dict):
        obs: Any = {k: _shared((actors,) + v.shape, torch.from_numpy(v).dtype) for k, v in example.items()}
    else:
        obs = _shared((actors,) + example.shape, torch.from_numpy(example).dtype)
    outputs = {k: _shared((actors,) + tuple(v.shape), v.dtype) for k, v in out.items()}
    recurrent = 'rnn_state' in out  # a recurrent collect mode returns the state each env acted from
    log_std = getattr(policy.model, 'sde_log_std', None) if getattr(policy.model, 'use_sde', False) else None
    return Slots(obs, outputs, _shared((actors, 7), torch.int64), _shared((2,), torch.int64), ctx.Semaphore(0),
                 [ctx.Semaphore(0) for _ in range(actors)], spaces,
                 _shared((actors, 2) + tuple(out['rnn_state'].shape), out['rnn_state'].dtype) if recurrent else None,
                 _shared((actors, envs), torch.bool) if recurrent else None,
                 _shared((actors, envs) + tuple(log_std.shape), log_std.dtype) if log_std is not None else None)


def next_states(slots: Slots, actor_id: int) -> torch.Tensor:
    """The recurrent states ``(B, R, H)`` actor ``actor_id``'s next request acts from (before zeroing its episode
    starts): the buffer of its next request's parity."""
    return slots.state[actor_id, (int(slots.header[actor_id, _REQ]) + 1) % 2]


# ---- the actor's side ------------------------------------------------------------------------------
class ServerCollectMode:
    """The collect mode as an actor runs it with an inference server: ``BoundedLagCollectMode``'s interface (the
    collector's ``forward``, ``start_segment``, ``version``, ``max_acting_lag``), the forward pass done by the server.

    ``local`` is the actor's own collect mode: only its ``get_train_sample``, ``policy_cfg`` and ``unroll_len`` are
    used (the server's weights act)."""

    def __init__(self, local: Any, slots: Slots, actor_id: int, stopped: Callable[[], bool]) -> None:
        self.slots, self.actor_id, self.stopped = slots, actor_id, stopped
        self.get_train_sample = local.get_train_sample
        self.policy_cfg = local.policy_cfg
        self.unroll_len = getattr(local, 'unroll_len', 1)
        # a recurrent model: the envs that start an episode at their next step, sent with the next request (the
        # server zeroes their states); every env at the first step. Feed-forward: nothing to tell the server.
        self._starts = None if slots.starts is None else slots.starts[actor_id]
        self._pending = None if self._starts is None else torch.ones_like(self._starts)
        self.episode_start = None if self._starts is None else self._episode_start  # (the collector skips None)
        self._redraw = True  # gSDE: the first step draws the exploration matrices
        self.version = -1
        self.max_acting_lag = 0
        self._fresh = True
        self._head = slots.header.numpy()[actor_id]
        self._obs = slots.obs
        self._outputs = {k: v[actor_id] for k, v in slots.outputs.items()}
        self._reply = slots.replies[actor_id]
        self._stamp = torch.zeros(0, dtype=torch.int64)

    def reset(self) -> None:
        """Every env starts an episode (the collector reset them): a recurrent model's states are zeroed, gSDE's
        matrices redrawn."""
        self._redraw = True
        if self._pending is not None:
            self._pending.fill_(True)

    def _episode_start(self, env_ids: Any) -> None:
        """Envs ``env_ids`` start an episode at their next step: the server zeroes their states before it."""
        self._pending[torch.as_tensor(np.asarray(env_ids), dtype=torch.long)] = True

    def start_segment(self) -> None:
        """The segment's first request asks the server for the newest weights; the lag record restarts."""
        self._fresh = True
        self.max_acting_lag = 0

    def _put(self, obs: Any) -> None:
        if isinstance(obs, dict):
            for key, value in obs.items():
                self._obs[key][self.actor_id].copy_(value)
        else:
            self._obs[self.actor_id].copy_(obs)

    def forward(self, obs: Any) -> Dict[str, torch.Tensor]:
        head = self._head
        self._put(obs)
        if self._starts is not None:
            self._starts.copy_(self._pending)
            self._pending.fill_(False)
        head[_FRESH], head[_REDRAW] = int(self._fresh), int(self._redraw)
        self._fresh = self._redraw = False
        seq = int(head[_REQ]) + 1
        head[_REQ] = seq  # written last: the request is complete
        self.slots.requests.release()
        while True:
            self._reply.acquire(timeout=_POLL_S)  # a stale release (a served request of a dead actor) is skipped
            if int(head[_REP]) == seq:
                break
            if self.stopped():
                raise SystemExit(0)  # the run ends: the actor's process leaves through its finally blocks
        version, lag = int(head[_VER]), int(head[_LAG])
        self.version = version
        self.max_acting_lag = max(self.max_acting_lag, lag)
        output = {k: v.clone() for k, v in self._outputs.items()}
        envs = int(output['action'].shape[0])
        if self._stamp.shape[0] != envs or (envs and int(self._stamp[0]) != version):
            self._stamp = torch.full((envs,), version, dtype=torch.int64)
        output[VERSION_KEY] = self._stamp
        return output


@dataclass
class ServerClient:
    """What an actor process gets (picklable): its slot, and the stop flag of the run."""

    slots: Slots
    actor_id: int
    shared: Any  # SharedWeights (its stop flag)

    def collect_mode(self, local: Any) -> ServerCollectMode:
        return ServerCollectMode(local, self.slots, self.actor_id, self.shared.stopped)


# ---- the server's side -----------------------------------------------------------------------------
class InferenceLoop:
    """The server's work: batch the waiting requests, run the collect mode once, write the replies."""

    def __init__(self, cfg: Any, slots: Slots, shared: Any, incarnation: int) -> None:
        from ...registry import import_names
        from ...utils import set_global_seed, set_torch_threads
        from .roles import actor_seed

        cfg = copy.deepcopy(cfg)  # policy.cuda as the learner has it: the server is the one worker on the GPU
        import_names(cfg.import_names)
        set_global_seed(actor_seed(cfg, 0, incarnation))  # actor 0's stream: one actor acts as it would on its own
        set_torch_threads(cfg.policy.learn.torch_threads)
        self.slots, self.shared = slots, shared
        policy = _policy(cfg, slots.spaces)
        self.model, self.mode = policy.model, policy.collect_mode
        self.sde_sample_freq = int(cfg.policy.collect.get('sde_sample_freq', 4))  # (validated by the policy)
        self.max_policy_lag = int(cfg.parallel.max_policy_lag)
        self.version = -1
        self._head = slots.header.numpy()
        self._stats = slots.stats.numpy()

    def step(self) -> int:
        """Serve every request that waits (none: return 0 at once); the number served."""
        head = self._head
        req = head[:, _REQ].copy()
        ready = np.flatnonzero(req != head[:, _REP])
        if not len(ready):
            return 0
        newest = self.shared.latest_version()
        if self.version < 0 or newest - self.version > self.max_policy_lag or (
                newest > self.version and head[ready, _FRESH].any()):
            self.version = self.shared.load_latest(self.mode.load_weights)
        index = torch.from_numpy(ready)
        whole = len(ready) == head.shape[0]
        obs = self.slots.obs
        with torch.inference_mode():
            if isinstance(obs, dict):
                batch: Any = {k: (v if whole else v[index]).flatten(0, 1) for k, v in obs.items()}
            else:
                batch = (obs if whole else obs[index]).flatten(0, 1)
            parity = torch.from_numpy(req[ready] % 2)  # (recurrent states: the buffer each request acts from)
            if self.slots.state is not None:
                self._load_states(index, parity)
            if self.slots.sde is not None and self.sde_sample_freq > 1:  # (at 1 the collect mode draws every step)
                self._load_sde(ready, index, whole)
            out = self.mode.forward(batch)
            if self.slots.state is not None:
                self._store_states(index, parity)
            for key, slot in self.slots.outputs.items():
                value = out[key].reshape((len(ready),) + tuple(slot.shape[1:]))
                if whole:
                    slot.copy_(value)
                else:
                    slot[index] = value
        head[ready, _VER] = self.version
        head[ready, _LAG] = max(0, newest - self.version)
        head[ready, _REP] = req[ready]
        self._stats += (1, len(ready))
        for actor_id in ready:
            self.slots.replies[int(actor_id)].release()
        return len(ready)

    def _load_states(self, index: torch.Tensor, parity: torch.Tensor) -> None:
        """Hand the collect mode the waiting actors' states ``(k * B, R, H)`` (each request's buffer), zeroed where an
        episode starts, and their starts: it acts from them as from its own (``EnvStates``), then holds the next
        states."""
        slots = self.slots
        start = slots.starts[index].flatten(0, 1)
        state = slots.state[index, parity].flatten(0, 1)
        self.mode.load_state_dict({'rnn': {'state': state.masked_fill(start[:, None, None], 0.0), 'start': start}})

    def _load_sde(self, ready: np.ndarray, index: torch.Tensor, whole: bool) -> None:
        """gSDE: redraw the matrices of the waiting actors whose schedule says so (in actor order, from the server's
        RNG: one actor draws what its own ``StateDependentNoise`` would), count their step, hand the collect mode
        their matrices ``(k * B, L, D)`` with a schedule that draws nothing more this step."""
        head, sde = self._head, self.slots.sde
        for actor in ready:
            if head[actor, _REDRAW] or head[actor, _SDE_STEPS] % self.sde_sample_freq == 0:
                sde[actor] = draw_exploration_matrices(self.model, sde.shape[1]).cpu()
                head[actor, _SDE_STEPS] = 0
        head[ready, _SDE_STEPS] += 1
        self.mode.load_state_dict({'sde_noise': {'weights': (sde if whole else sde[index]).flatten(0, 1), 'steps': 1}})

    def _store_states(self, index: torch.Tensor, parity: torch.Tensor) -> None:
        """Write the next states the collect mode holds into the waiting actors' other buffers."""
        slot = self.slots.state
        slot[index, 1 - parity] = self.mode.state_dict()['rnn']['state'].reshape((len(index),) + tuple(slot.shape[2:]))

    def serve(self) -> None:
        """Until the run stops: wait for a request (in slices of ``_POLL_S``), serve what waits."""
        while not self.shared.stopped():
            self.slots.requests.acquire(timeout=_POLL_S)
            self.step()


def _server_main(cfg: Dict[str, Any], slots: Slots, shared: Any, conn: Connection, beats: Any,
                 incarnation: int) -> None:
    """The server process: build the collect mode, say it is ready, serve until the run stops."""
    from .local import _child_setup, _start_heartbeat, serve_child

    _child_setup('acf-inference')
    _start_heartbeat(beats, 0)
    serve_child(conn, ROLE, 0, incarnation, lambda: InferenceLoop(EasyDict(cfg), slots, shared, incarnation),
                lambda loop: loop.serve())


# ---- the learner's side ----------------------------------------------------------------------------
class InferenceServer:
    """The learner's handle of the server process: starts it, watches it (pipe, sentinel, heartbeat), restarts it.

    ``LocalBackend`` calls ``spawn`` before its actors start, adds ``waitables()`` to what it waits on, passes
    ``client(actor_id)`` to each actor, calls ``events``/``check_heartbeat`` from ``receive`` and ``close`` at the end.
    """

    def __init__(self, cfg: Any, ctx: Any, plain_cfg: Dict[str, Any], shared: Any, daemonic: bool) -> None:
        self.cfg, self._ctx, self._plain_cfg, self.shared, self._daemonic = cfg, ctx, plain_cfg, shared, daemonic
        self.slots = allocate(cfg, ctx)
        self.beats = ctx.Array('d', 1, lock=False)
        self.child: Any = None  # a local._Child
        self.incarnation = 0

    def client(self, actor_id: int) -> ServerClient:
        return ServerClient(self.slots, actor_id, self.shared)

    def spawn(self) -> Any:
        from .local import _Child

        mine, theirs = self._ctx.Pipe(duplex=True)
        self.beats[0] = time.monotonic()
        process = self._ctx.Process(target=_server_main, name='acframe-inference', daemon=self._daemonic,
                                    args=(self._plain_cfg, self.slots, self.shared, theirs, self.beats,
                                          self.incarnation))
        with held_while_a_child_starts(self._ctx):  # (recorded inside: a Ctrl-C held meanwhile comes at its end)
            process.start()
            theirs.close()
            self.child = _Child(process, mine, self.incarnation)
            self.incarnation += 1
        return self.child

    def waitables(self) -> List[Any]:
        return [] if self.child is None else [self.child.conn, self.child.process.sentinel]

    def events(self, ready: Any, note_failure: Callable[..., None], drain: Callable[[Any], Tuple[List[Any], bool]],
               lost_reason: Callable[[Any], str]) -> None:
        """Handle what the server sent (``WorkerReady``, ``WorkerError``: ``drain`` is the backend's, which notes
        them on the child and says whether it is lost) or its death: restart it (``note_failure`` warns, or raises
        when ``parallel.max_restarts`` is spent)."""
        child = self.child
        if child is None or (child.conn not in ready and child.process.sentinel not in ready):
            return
        _, lost = drain(child)
        if lost:
            self.child = None
            note_failure(ROLE, 0, lost_reason(child), child.error)
            self.spawn()

    def check_heartbeat(self, ready: Any, now: float, awake_since: float, timeout: float,
                        silence: Callable[[int, float, float], str], kill: Callable[[Any], None],
                        reap: Callable[..., None], note_failure: Callable[..., None]) -> None:
        child = self.child
        if child is None or child.conn in ready or child.process.sentinel in ready or not child.process.is_alive():
            return
        silent = now - max(self.beats[0], awake_since)
        if silent <= timeout:
            return
        how = silence(child.process.pid, silent, timeout)
        kill(child.process)
        self.child = None
        reap(child, grace=0.1)
        note_failure(ROLE, 0, how)
        self.spawn()

    def served(self) -> Tuple[int, int]:
        """(batches run, requests served) so far: their ratio is the mean batch in actors."""
        return int(self.slots.stats[0]), int(self.slots.stats[1])

    def close(self, reap: Callable[..., None], grace: float) -> None:
        """Stop the server (the run's stop flag is set: it leaves within ``_POLL_S``)."""
        if self.child is not None:
            self.shared.request_stop()
            reap(self.child, grace=grace)
            self.child = None


def start_inference_server(cfg: Any, ctx: Any, plain_cfg: Dict[str, Any], shared: Any,
                           daemonic: bool) -> Optional[InferenceServer]:
    """The server of ``parallel.inference='server'`` (not started yet), else None."""
    if cfg.parallel.get('inference', 'actor') != 'server':
        return None
    return InferenceServer(cfg, ctx, plain_cfg, shared, daemonic)


__all__ = ['InferenceServer', 'InferenceLoop', 'ServerCollectMode', 'ServerClient', 'Slots', 'allocate',
           'check_inference', 'next_states', 'start_inference_server']
