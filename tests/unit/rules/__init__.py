"""Unit tests of rulemip/rules/."""
