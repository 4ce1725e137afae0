"""Frame-deduplicated replay (``policy.other.replay_buffer.dedup_frames``): bytes per stored transition and the
time per push and per sampled batch, plain against dedup, on real Pong frames.

The frames: ``pong_impala.py``'s envs (ALE/Pong-v5, 84x84 grey, frame skip 4, 4 stacked frames, EpisodicLife; the
``sync`` manager), random actions, ``--envs`` envs for ``--steps`` steps each, collected into segments as the
collector does (``final_obs`` the last stack of an ended episode, zeros elsewhere). Both buffers then take the same
segments and the same sample calls, alternating plain and dedup push by push (the machine is shared: its speed
drifts):

* ``fifo`` (IMPALA): unrolls of ``--unroll`` steps (``split_segment``), ``--batch`` unrolls a batch;
* ``episodic`` (ACER): the segments themselves, ``--batch`` windows of ``--unroll`` steps a batch.

Bytes per transition: the storage at the end (plain: its tensors; dedup: the plain leaves, the frame store's frames
with their bookkeeping, the indices) over the transitions stored, and the live frames over them; the
``storage_bytes`` estimate per transition beside it. Every dedup batch is checked equal to the plain batch.

    python bench/bench_frame_dedup.py [--envs 8] [--steps 2000] [--unroll 20] [--batch 32] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import time
from typing import Any, Dict, List

import numpy as np
import torch

from acframe.config import compile_config
from acframe.data import split_segment, ttorch
from acframe.data.buffer import ReplayBuffer
from acframe.data.episodic_buffer import EpisodicReplayBuffer
from acframe.data.frames import space_frames
from acframe.data.tree import leaves
from acframe.entry import budget
from acframe.envs import make_env_manager


def collect(envs: int, steps: int, segment_len: int, seed: int) -> List[ttorch.Tensor]:
    """Time-major segments ``(segment_len, envs)`` of Pong played with random actions."""
    cfg = compile_config('pong_impala.py', [f'env.collector_env_num={envs}', 'env.manager=sync'])  # (a dizoo_configs name: from any folder)
    manager = make_env_manager(cfg, 'collector', envs, seed=seed)
    rng = np.random.default_rng(seed)
    obs = manager.reset()
    n_actions = int(manager.action_space.n) if hasattr(manager, 'action_space') else 6
    segments = []
    for _ in range(steps // segment_len):
        obs_buf = np.zeros((segment_len + 1, envs) + obs.shape[1:], dtype=np.uint8)
        final = np.zeros((segment_len, envs) + obs.shape[1:], dtype=np.uint8)
        terminated = np.zeros((segment_len, envs), dtype=bool)
        truncated = np.zeros((segment_len, envs), dtype=bool)
        reward = np.zeros((segment_len, envs), dtype=np.float32)
        actions = rng.integers(0, n_actions, (segment_len, envs))
        obs_buf[0] = obs
        for t in range(segment_len):
            result = manager.step(actions[t])
            obs_buf[t + 1] = result.obs
            reward[t], terminated[t], truncated[t] = result.reward, result.terminated, result.truncated
            if len(result.done_index):
                final[t, result.done_index] = result.final_obs
        obs = obs_buf[-1]
        segments.append(ttorch.Tensor({
            'obs': torch.from_numpy(obs_buf), 'final_obs': torch.from_numpy(final),
            'action': torch.from_numpy(actions), 'reward': torch.from_numpy(reward),
            'terminated': torch.from_numpy(terminated), 'truncated': torch.from_numpy(truncated),
            'logit': torch.zeros(segment_len, envs, n_actions), 'behaviour_version': torch.zeros(segment_len, envs,
                                                                                                 dtype=torch.int64),
        }))
    manager.close()
    return segments


def stored_bytes(buffer: Any) -> int:
    storage = buffer._storage
    plain = sum(x.nbytes for _, x in leaves(storage)) if isinstance(storage, ttorch.Tensor) else \
        sum(x.nbytes for x in storage.values())
    return plain + sum(s.nbytes() for s in buffer._frames.values()) + \
        sum(rows.nbytes for rows in getattr(buffer, '_frame_index', {}).values())


def same(a: ttorch.Tensor, b: ttorch.Tensor) -> bool:
    x, y = dict(leaves(a)), dict(leaves(b))
    return x.keys() == y.keys() and all(x[k].dtype == y[k].dtype and torch.equal(x[k], y[k]) for k in x)


def run(kind: str, segments: List[ttorch.Tensor], unroll: int, batch: int, samples_per_push: int) -> Dict[str, Any]:
    envs, seg_len = int(segments[0].reward.shape[1]), int(segments[0].reward.shape[0])
    stored_transitions = len(segments) * seg_len * envs
    if kind == 'fifo':
        cap = stored_transitions // unroll
        make = lambda dedup: ReplayBuffer(replay_buffer_size=cap, max_use=10 ** 9, seed=0, dedup_frames=dedup)
        data = [split_segment(s, unroll) for s in segments]
        draw = lambda b: b.sample(batch)
    else:
        cap = stored_transitions
        make = lambda dedup: EpisodicReplayBuffer(replay_buffer_size=cap, unroll_len=unroll, replay_ratio=0,
                                                  seed=0, dedup_frames=dedup)
        data = segments
        draw = lambda b: b.sample_windows(batch)
    buffers = {'plain': make(False), 'dedup': make(True)}
    push_s = {k: 0.0 for k in buffers}
    sample_s = {k: [] for k in buffers}
    for i, item in enumerate(data):
        order = list(buffers) if i % 2 == 0 else list(buffers)[::-1]
        for name in order:
            start = time.perf_counter()
            buffers[name].push(item)
            push_s[name] += time.perf_counter() - start
            if kind == 'episodic':
                buffers[name]._fresh.clear()
    for r in range(samples_per_push):
        got = {}
        for name in (list(buffers) if r % 2 == 0 else list(buffers)[::-1]):
            start = time.perf_counter()
            got[name] = draw(buffers[name])
            sample_s[name].append(time.perf_counter() - start)
        assert same(got['plain'], got['dedup']), 'a dedup batch differs from the plain one'
    obs_space = type('Box', (), {'shape': tuple(segments[0].obs.shape[2:]), 'dtype': np.uint8})()
    obs_bytes = int(np.prod(obs_space.shape))
    step = 8 + 4 * int(segments[0].logit.shape[-1]) + 14
    per_unit = unroll if kind == 'fifo' else 1
    cls = type(buffers['plain'])
    frames = space_frames(obs_space)
    store = next(iter(buffers['dedup']._frames.values()))
    n = len(buffers['plain'])
    return {
        'kind': kind, 'transitions': stored_transitions, 'envs': envs, 'unroll': unroll, 'batch': batch,
        'bytes_per_transition': {k: stored_bytes(b) / stored_transitions for k, b in buffers.items()},
        'estimate_per_transition': {'plain': cls.storage_bytes(1, obs_bytes, step, unroll) / per_unit,
                                    'dedup': cls.storage_bytes(1, obs_bytes, step, unroll, frames=frames) / per_unit},
        'live_frames_per_transition': store.live / stored_transitions, 'frame_chunks': len(store._chunks),
        'push_ms_per_transition': {k: 1e3 * v / stored_transitions for k, v in push_s.items()},
        'sample_ms_median': {k: 1e3 * float(np.median(v)) for k, v in sample_s.items()},
        'stored': n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--envs', type=int, default=8)
    parser.add_argument('--steps', type=int, default=2000, help='env steps per env')
    parser.add_argument('--unroll', type=int, default=20)
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--repeats', type=int, default=30, help='sampled batches per buffer')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    segments = collect(args.envs, args.steps, 5 * args.unroll, args.seed)
    print(f"collected {len(segments)} segments of {5 * args.unroll} x {args.envs} Pong steps in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    for kind in ('fifo', 'episodic'):
        print(json.dumps(run(kind, segments, args.unroll, args.batch, args.repeats)), flush=True)


if __name__ == '__main__':
    main()
