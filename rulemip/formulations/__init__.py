"""rulemip.formulations (see ARCHITECTURE.md)."""
