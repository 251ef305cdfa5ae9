"""rulemip.certify (see ARCHITECTURE.md)."""
