"""Tests of the package's structure: import cycles, no deprecation layer, the callers of the
status rule, one way to say time, one clock."""
