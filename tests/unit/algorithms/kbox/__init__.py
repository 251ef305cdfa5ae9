"""Unit tests of rulemip/algorithms/kbox/."""
