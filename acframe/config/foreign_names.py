"""Hyperparameter names of Stable-Baselines3 (and the RL Zoo's files), sb3-contrib's ``RecurrentPPO`` and DI-engine's
replay priority switches (on the command line; a DI-engine config file's are translated) that a user coming from them
writes for acframe's keys: an unknown key with one of these names is answered with acframe's key
(``config.compile.unknown_key_message`` and the model's unknown-key message), not with the nearest spelling.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

SB3 = "Stable-Baselines3's"
ZOO = "the RL Zoo's"
RECURRENT_PPO = "sb3-contrib's RecurrentPPO"
DING = "DI-engine's"
#: what DI-engine's priority switches are in acframe (a DI-engine config file's are translated; an override is not)
_PRIORITIZED = ("a prioritized buffer type: 'prioritized' (for IMPALA's fifo) or 'episodic_prioritized' (for ACER's "
                "episodic); a DI-engine config file's priority=True is read as that")

#: name -> (whose name it is, acframe's key (None: acframe has none), what to know when translating its value or None)
FOREIGN_NAMES: Dict[str, Tuple[str, Optional[str], Optional[str]]] = {
    'n_steps': (SB3, 'policy.collect.n_sample', "samples per collection over all envs: n_steps x n_envs for PPO and "
                "A2C; IMPALA's and ACER's samples are unrolls: n_steps x n_envs / unroll_len"),
    'n_envs': (SB3, 'env.collector_env_num', None),
    'n_timesteps': (SB3, 'max_env_step', "or --max-env-step"),
    'total_timesteps': (SB3, 'max_env_step', "or --max-env-step; learn(total_timesteps=N)'s budget"),
    'target_kl': (SB3, None, "PPO's KL early stop of an update is not implemented: policy.learn.epoch_per_collect "
                  "bounds its epochs and policy.learn.clip_ratio its step"),
    'env_wrapper': (ZOO, 'env.type', "wrap the env in a factory of your own, registered with "
                    "@ENV_REGISTRY.register('name') and named by env.type (docs/custom_env.md)"),
    'gamma': (SB3, 'policy.learn.discount_factor', None),
    'ent_coef': (SB3, 'policy.learn.entropy_weight', None),
    'vf_coef': (SB3, 'policy.learn.value_weight', None),
    'clip_range': (SB3, 'policy.learn.clip_ratio', None),
    'clip_range_vf': (SB3, 'policy.learn.value_clip_ratio', None),
    'n_epochs': (SB3, 'policy.learn.epoch_per_collect', None),
    'max_grad_norm': (SB3, 'policy.learn.grad_clip_value', None),
    'normalize_advantage': (SB3, 'policy.learn.adv_norm', None),
    'policy_kwargs': (SB3, 'policy.model', "its keys: encoder_hidden_size_list, activation, ..."),
    'net_arch': (SB3, 'policy.model.encoder_hidden_size_list', "with actor_head_hidden_size and "
                 "critic_head_hidden_size for the heads"),
    'activation_fn': (SB3, 'policy.model.activation', "'tanh' or 'relu'"),
    'ortho_init': (SB3, 'policy.model.orthogonal_init', None),
    'log_std_init': (SB3, 'policy.model.init_sigma', "the standard deviation itself: exp(log_std_init)"),
    'normalize': (SB3, 'policy.model.obs_norm', "VecNormalize's observations; its rewards: policy.learn.reward_norm, "
                  "where the policy has it"),
    'lstm_hidden_size': (RECURRENT_PPO, 'policy.model.rnn.hidden_size', None),
    'n_lstm_layers': (RECURRENT_PPO, 'policy.model.rnn.num_layers', None),
    'shared_lstm': (RECURRENT_PPO, 'policy.model.share_encoder', "True: one encoder and core for the actor and "
                    "the critic"),
    'enable_critic_lstm': (RECURRENT_PPO, 'policy.model.share_encoder', "its default True with shared_lstm=False is "
                           "share_encoder=False, a core of the critic's own; a critic without a core has no acframe "
                           "form"),
    'priority': (DING, 'policy.other.replay_buffer.type', _PRIORITIZED),
    'priority_IS_weight': (DING, 'policy.other.replay_buffer.is_weight', "a key of the prioritized buffer types"),
    'priority_power_factor': (DING, 'policy.other.replay_buffer.alpha', "a key of the prioritized buffer types"),
    'IS_weight_power_factor': (DING, 'policy.other.replay_buffer.beta', "a key of the prioritized buffer types"),
    'IS_weight_anneal_train_iter': (DING, 'policy.other.replay_buffer.anneal_step',
                                    "a key of the prioritized buffer types"),
}


def foreign_name_message(full: str, key: str) -> Optional[str]:
    """``"that is <whose> name; acframe's is '<key>' (<note>)"`` for a foreign name ``key`` (the last part of the
    dotted ``full``), else None."""
    entry = FOREIGN_NAMES.get(str(key))
    if entry is None or full == entry[1]:
        return None
    whose, ours, note = entry
    if ours is None:  # (no acframe counterpart)
        return f"that is {whose} name; acframe has no such setting ({note})"
    return f"that is {whose} name; acframe's is '{ours}'" + (f" ({note})" if note else "")
