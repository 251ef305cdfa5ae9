"""rulemip.formulations (see docs/architecture.md)."""
