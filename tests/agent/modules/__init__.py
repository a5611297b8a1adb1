"""Tests of agent/modules/: the per-module breakdown against an independent count."""
