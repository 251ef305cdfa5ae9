"""Unit tests of rulemip/boosting/boxsearch/."""
