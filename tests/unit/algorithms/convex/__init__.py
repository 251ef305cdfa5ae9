"""Unit tests of rulemip/algorithms/convex/."""
