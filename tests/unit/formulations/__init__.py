"""Unit tests of rulemip/formulations/."""
