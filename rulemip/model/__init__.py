"""rulemip.model (see ARCHITECTURE.md)."""
