"""rulemip.solvers (see ARCHITECTURE.md)."""
