"""Machines read through a pipe rather than sampled here: one host over the user's own ssh
running `vramscope stream` (host_stream, the command it runs: ssh_command) and what is
known of it (host_view), several hosts as one source (hosts), a fleet read back from
Prometheus (prometheus, fleet_owners), the window's own sampler process read like a host
(local_sampler), and the child-process plumbing they share (pipe_writer, child_group).
May import the standard library, vramscope.core (the stream codec above all) and the
cross-cutting modules of vramscope.sources; never Qt.
"""
