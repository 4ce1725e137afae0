"""Pipelines: serial (one process; off-policy and on-policy) and parallel (actors + learner, ``acframe.entry.parallel``).

``from acframe.entry import serial_pipeline, serial_pipeline_onpolicy`` works as ``from ding.entry import ...`` does.
"""
from .run_base import RunBase
from .serial import SerialRun, serial_pipeline
from .serial_onpolicy import serial_pipeline_onpolicy

__all__ = ['RunBase', 'SerialRun', 'serial_pipeline', 'serial_pipeline_onpolicy']
