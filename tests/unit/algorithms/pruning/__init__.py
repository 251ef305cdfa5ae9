"""Unit tests of rulemip/algorithms/pruning/."""
