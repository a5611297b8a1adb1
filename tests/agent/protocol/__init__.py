"""Tests of agent/protocol/: the wire, the monitor's client, hostile replies."""
