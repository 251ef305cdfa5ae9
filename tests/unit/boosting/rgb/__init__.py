"""Unit tests of rulemip/boosting/rgb/."""
