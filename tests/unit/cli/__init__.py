"""Unit tests of rulemip/cli/."""
