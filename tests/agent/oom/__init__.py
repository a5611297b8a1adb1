"""Tests of agent/oom/: the OOM post-mortem."""
