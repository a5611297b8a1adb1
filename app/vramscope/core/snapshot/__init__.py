"""PyTorch memory snapshots (``torch.cuda.memory._dump_snapshot`` pickles), read without running code.

What it holds (no Qt; numpy and the standard library, plus ``vramscope.agent``'s
segment summary and its list of PyTorch-internal paths):

- ``safe_load``: the file unpickled by the C unpickler with every global
  refused, so only dicts, lists, tuples, strings, numbers, booleans and None
  are built; a file that is not a snapshot, is truncated or names a global
  gets one line (``SnapshotError``); progress and cancellation for the window;
- ``columns``: the snapshot as columns -- per device the trace as numpy
  arrays, frames and stacks interned once, fields a newer PyTorch added kept;
- ``replay``: the allocations as intervals (``alloc`` ... ``free_completed``,
  memory alive before the trace counted from the start, as memory_viz's
  "Active Memory Timeline" does), the allocated curve, its peak, what was
  alive at any instant grouped by stack, the segments at any instant;
- ``summary``: the per-device summary ``vramscope snapshot`` prints and its
  JSON, and the difference of two snapshots.

The format is PyTorch's, documented in ``torch.cuda.memory._snapshot``
(the ``Snapshot``, ``Segment``, ``Block``, ``TraceEntry`` and ``Frame``
TypedDicts) and "Understanding CUDA Memory Usage"
(https://pytorch.org/docs/stable/torch_cuda_memory.html).
"""
