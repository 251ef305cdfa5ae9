"""rulemip.algorithms (see docs/architecture.md)."""
