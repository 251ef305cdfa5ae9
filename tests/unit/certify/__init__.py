"""Unit tests of rulemip/certify/."""
