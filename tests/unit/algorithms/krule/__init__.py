"""Unit tests of rulemip/algorithms/krule/."""
