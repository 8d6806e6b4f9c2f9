"""Benchmarks of the package's write rules and streaming store against peers: ``python -m benchmarks.run``."""
