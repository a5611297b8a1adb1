"""The simulated workstation behind `vramscope --demo` and the tests: scripted runs,
the busy demo and its caught OOM, per-module figures and allocator snapshots for the
demo, and a provider that replays allocator statistics for tests and benches. May
import the standard library, vramscope.core and vramscope.sources.agents (for the
allocator summary's checked form); vramscope.core never imports it.
"""
