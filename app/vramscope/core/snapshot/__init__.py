"""PyTorch memory snapshots (``torch.cuda.memory._dump_snapshot`` pickles), read without running code.

What it holds (no Qt; numpy and the standard library, plus ``vramscope.agent``'s
segment summary and its list of PyTorch-internal paths):

- ``safe_load``: the file unpickled by the C unpickler with every global
  refused, so only dicts, lists, tuples, strings, numbers, booleans and None
  are built; a file that is not a snapshot, is truncated or names a global
  gets one line (``SnapshotError``); progress and cancellation for the window;
- ``columns`` (the model), ``stacks`` (frames and stacks interned once) and
  ``building`` (the unpickled snapshot turned into them): per device the
  trace as numpy arrays, fields a newer PyTorch added kept;
- ``native`` (the C extension ``_columns``, optional: built where a compiler
  is): the pickle read straight into columns -- entries never kept as
  objects, about the file's size in memory -- with the same refusals; where
  it is not built, or leaves a pickle to Python, the two above read the file;
- ``reading``: one call for either reader (``Snapshot.reader`` says which and
  why), refused up front where the file would not fit in the free memory;
- ``pairing`` and ``replay``: the allocations as intervals (``alloc`` ...
  ``free_completed``, memory alive before the trace counted from the start,
  as memory_viz's "Active Memory Timeline" does), the allocated curve, its
  peak, what was alive at any instant grouped by stack, the segments at any
  instant;
- ``timeline``: the curve as stacked bands for the viewer, downsampled
  without losing a peak;
- ``summary`` and ``text``: the per-device summary ``vramscope snapshot``
  prints and its JSON, and the difference of two snapshots;
- ``example``: a made-up training run's snapshot (screenshots, tests).

The format is PyTorch's, documented in ``torch.cuda.memory._snapshot``
(the ``Snapshot``, ``Segment``, ``Block``, ``TraceEntry`` and ``Frame``
TypedDicts) and "Understanding CUDA Memory Usage"
(https://pytorch.org/docs/stable/torch_cuda_memory.html).
"""
