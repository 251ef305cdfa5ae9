"""Certificates, verification and approximation-gap studies (docs/explanation/gaps.md,
docs/explanation/solving.md)."""

from __future__ import annotations

import importlib
from typing import Any

from rulemip.certify.certificate import Certificate, make_certificate
from rulemip.certify.verification import CheckResult, VerificationReport, verify

_LAZY = {"gap_study": "rulemip.certify.gap", "GapStudy": "rulemip.certify.gap"}

__all__ = ["Certificate", "CheckResult", "GapStudy", "VerificationReport", "gap_study",
           "make_certificate", "verify"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rulemip.certify' has no attribute {name!r}")
