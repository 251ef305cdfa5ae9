"""Unit tests of rulemip/boosting/."""
