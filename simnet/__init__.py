"""Simulated webs and peer networks on loopback, experiments and benchmarks."""
