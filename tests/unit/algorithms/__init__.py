"""Unit tests of rulemip/algorithms/."""
