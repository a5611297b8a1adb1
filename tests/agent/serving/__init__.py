"""Tests of agent/serving/: the agent's socket server, its limits and runtime directories."""
