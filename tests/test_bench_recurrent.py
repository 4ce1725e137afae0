"""Specification of ``bench/bench_recurrent.py --fused-call``: the LSTM's fused call is split into ATen's ops and
oneDNN's execution inside them, and the rest (ATen's set-up) is what the two leave."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope='module')
def bench():
    spec = importlib.util.spec_from_file_location('bench_recurrent', os.path.join(ROOT, 'bench', 'bench_recurrent.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fused_call_is_split_into_atens_set_up_and_onednns_execution(bench):
    split = bench.fused_call_split(hidden=16, repeats=1, calls=5)
    assert set(split) == {'35x8_rows', '1x8_rows'}
    for rows in split.values():
        (aten_fwd,), (dnn_fwd,) = rows['aten_forward_us'], rows['onednn_forward_us']
        (aten_bwd,), (dnn_bwd,) = rows['aten_backward_us'], rows['onednn_backward_us']
        (reorders,), (set_up,) = rows['onednn_reorders_per_call_us'], rows['aten_setup_per_call_us']
        assert 0 < dnn_fwd < aten_fwd and 0 < dnn_bwd < aten_bwd and reorders > 0  # oneDNN runs inside ATen's ops
        assert set_up == pytest.approx(aten_fwd + aten_bwd - dnn_fwd - dnn_bwd - reorders, abs=0.2)
