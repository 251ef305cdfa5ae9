"""rulemip.testing (see ARCHITECTURE.md)."""
