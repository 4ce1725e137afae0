"""Pipelines: serial (one process) and, later, parallel (actors + learner)."""
from .serial import SerialRun, serial_pipeline

__all__ = ['SerialRun', 'serial_pipeline']
