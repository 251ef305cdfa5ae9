"""Unit tests of rulemip/algorithms/local/."""
