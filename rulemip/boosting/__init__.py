"""rulemip.boosting (see ARCHITECTURE.md)."""
