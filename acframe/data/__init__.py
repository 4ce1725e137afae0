"""Segments and batches (treetensor trees) and replay buffers."""
from .buffer import ReplayBuffer
from .tree import flatten_lead, lead_shape, leaves, make_tree, split_segment, to_dict, tree_map, ttorch

__all__ = ['ReplayBuffer', 'flatten_lead', 'lead_shape', 'leaves', 'make_tree', 'split_segment', 'to_dict', 'tree_map', 'ttorch']
