"""Tests of agent/allocator/: the allocator's statistics, peaks and their windows, segments, allocation sites, ROCm and XPU, what lies outside PyTorch."""
