"""Unit tests of rulemip/model/."""
