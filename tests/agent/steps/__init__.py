"""Tests of agent/steps/: steps counted, quiet stretches, phases and their peaks, the reading after each step."""
