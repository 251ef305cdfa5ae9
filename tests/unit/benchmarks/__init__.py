"""Unit tests of the helpers of benchmarks/."""
