"""Unit tests of the modules directly in rulemip/ (budget, losses, refit, _validation,
_kernels)."""
