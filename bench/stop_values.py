"""Re-check shipped stop values on hold-out seeds (issue 47, item 5).

    python bench/stop_values.py --configs lunarlander_continuous_ppo,acrobot_impala --seeds 3,4

For each ``dizoo_configs/<row>_<algo>.py`` and seed it trains the shipped config with the ``acframe`` CLI in a fresh
process (one torch thread, the config's own ``max_env_step``; ``--override`` as in bench/ladder.py) and evaluates
its best checkpoint on 50 fresh episodes (``bench/ladder.py``'s hold-out: env seeds no evaluation used). A stop
value is backed when every run that stopped there holds it on the hold-out, or at least the ladder's target.
Results accumulate in ``bench/results/stop_values.json`` (a rerun of a config/seed replaces its entry); the lines
printed are the rows of the table in docs/reliability.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ladder import ROWS, run_acframe  # noqa: E402

RESULTS = os.path.join(HERE, 'results', 'stop_values.json')


def load() -> Dict[str, Any]:
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            return json.load(f)
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--configs', required=True, help="comma-separated <row>_<algo> names of dizoo_configs")
    parser.add_argument('--seeds', default='3,4')
    parser.add_argument('--override', action='append', default=[], help="acframe key.path=value override (repeatable)")
    args = parser.parse_args()
    from acframe.config import compile_config

    for name in args.configs.split(','):
        row, algo = name.rsplit('_', 1)
        cfg = compile_config(f'{name}.py', list(args.override))
        for seed in (int(s) for s in args.seeds.split(',')):
            out = run_acframe(row, algo, seed, int(cfg.max_env_step), args.override)
            out.pop('curve')
            out['target'] = ROWS[row]['target'] if row in ROWS else None
            out['overrides'] = list(args.override)
            results = load()  # (another run of this script may have written meanwhile)
            results[f'{name}/seed{seed}' + ''.join(f' {o}' for o in args.override)] = out
            os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
            with open(RESULTS, 'w') as f:
                json.dump(results, f, indent=1, sort_keys=True)
            print(f"{name} seed {seed}: stop {out['stop_value']}, solved {out['solved']} at {out['env_steps']} env steps, "
                  f"best eval {out['best']:.1f}, hold-out {out['holdout']['mean']:.1f} ± {out['holdout']['std']:.1f} "
                  f"(target {out['target']}), {out['wall_s']} s", flush=True)


if __name__ == '__main__':
    main()
