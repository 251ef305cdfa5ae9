"""rulemip.testing (see docs/architecture.md)."""
