"""rulemip.algorithms (see ARCHITECTURE.md)."""
