"""What :func:`rulemip.certify.verify` reports: one :class:`CheckResult` per check and, per
claim, a :class:`ClaimBasis` saying whether it was re-derived or taken on trust."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REDERIVED", "TAKEN_ON_TRUST", "CheckResult", "ClaimBasis"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    message: str


REDERIVED = "re-derived"
TAKEN_ON_TRUST = "taken on trust"


@dataclass(frozen=True)
class ClaimBasis:
    """How :func:`verify` knows one claim: ``re-derived`` from the data (and the model),
    or ``taken on trust`` from the certificate (``how`` says from what, and how to
    re-derive it)."""

    claim: str
    basis: str
    how: str

    @property
    def rederived(self) -> bool:
        return self.basis == REDERIVED
