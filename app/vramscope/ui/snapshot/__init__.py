"""The snapshot viewer: a PyTorch memory snapshot (``torch.cuda.memory._dump_snapshot``)
in a window of its own.

What it holds (Qt; the figures come from core/snapshot, Qt-free):

- ``loading``: the file read on a worker thread behind a progress dialog that
  cancels it;
- ``timeline_plot``: the active-memory timeline, the largest stacks stacked as
  bands and the rest merged into one, OOM markers, a cursor, the compared
  snapshot's total as a dashed line;
- ``alive_tree``: what was alive at the cursor, grouped by stack, each stack's
  frames under it;
- ``window``: the window (device, timeline, what was alive, the segment map at
  the cursor -- ui/allocator/segment_map.py, as drawn for live agents -- and the
  comparison of two snapshots), opened by ``vramscope FILE.pickle`` and File ▸
  Open snapshot.
"""
