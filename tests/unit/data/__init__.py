"""Unit tests of rulemip/data/."""
