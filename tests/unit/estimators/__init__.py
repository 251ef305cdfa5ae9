"""Unit tests of rulemip/estimators/."""
