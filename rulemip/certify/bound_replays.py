r"""Solver-free replays of a certificate's lower bound, and the slack they allow.

A claimed lower bound :math:`L` says that no model of the language has a risk below
:math:`L`. Where an exact search of the language is cheap enough, :func:`replay_lower_bound`
re-derives that from the data alone: it runs the search with :math:`L - s` as the value
to beat, and the bound is re-derived when the finished search meets nothing below it,
refuted when it does.

The slack :math:`s` (:func:`bound_slack`) is relative to the bound being checked, with a
round-off floor fixed by the data: :math:`s = \max(\mathrm{tol}\cdot|L|, 10^{-12} m_2)`,
:math:`m_2 = \sum_i w_i y_i^2 / W`. Nothing else a certificate records enters it — not
its rules or weights, its claimed risk or its recorded tolerances — so a forger cannot
make it large (issue 38: a slack of ``tol`` times the refitted risk of the recorded rules
let a bound 3× the optimum pass behind a poor model of risk 2.4·10⁷).

Replay kinds (:data:`REPLAYS`, the first that applies is run):

* one rule, squared loss: the exact box search (:mod:`rulemip.certify.replay`);
* two rules, squared loss, a language of at most :data:`PAIR_REPLAY_MAX_BOXES` boxes:
  the k-box pair scan (:mod:`rulemip.certify.replay_pairs`), for at most
  :data:`PAIR_REPLAY_SECONDS`;
* three rules, squared loss, at most :data:`TRIPLE_REPLAY_MAX_BOXES` boxes: the
  three-box scan, for at most :data:`TRIPLE_REPLAY_SECONDS`.

A new kind plugs in as one more :class:`BoundReplay` in :data:`REPLAYS`: a predicate
saying when it applies and a runner returning a :class:`ReplayOutcome` for a given value
to beat; the check, the message and the claim's basis are built here for every kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rulemip.certify.certificate import Certificate
from rulemip.certify.claims import REDERIVED, CheckResult, ClaimBasis
from rulemip.data import Dataset

__all__ = ["BOUND_ROUNDOFF", "REPLAYS", "BoundReplay", "ReplayOutcome", "bound_slack",
           "replay_lower_bound"]

#: the slack's floor relative to the data's second moment: round-off of risks computed as
#: differences of sums of squares (about 10⁻¹⁶ m₂ each), with room for the sums' growth
BOUND_ROUNDOFF = 1e-12
#: seconds the two-rule replay may take before the bound is taken on trust
PAIR_REPLAY_SECONDS = 60.0
#: languages of more candidate boxes than this are not replayed (the bound is taken on
#: trust): the scan's cost per first box makes a replay of millions of boxes take minutes
#: (diabetes, rules of 3 features: 6 M boxes) while 10⁵ take seconds
PAIR_REPLAY_MAX_BOXES = 500_000
#: seconds the three-rule replay may take before the bound is taken on trust
TRIPLE_REPLAY_SECONDS = 60.0
#: languages of more candidate boxes than this are not replayed for three rules: the
#: three-box scan proves 3 129 boxes in about 3 s and 7 332 in about 8 s of CPU but its
#: cost grows with the square of the boxes and with the linked pairs (diabetes, rules of
#: two features; docs/explanation/kbox_search.md §6)
TRIPLE_REPLAY_MAX_BOXES = 10_000


def bound_slack(lower_bound: float, tol: float, moment: float) -> float:
    r"""What a lower bound :math:`L` may exceed a model's risk by and still stand:
    :math:`\max(\mathrm{tol}\cdot|L|, 10^{-12}\,m_2)` with ``moment`` :math:`m_2` the
    data's second moment (module docstring)."""
    return max(tol * abs(float(lower_bound)), BOUND_ROUNDOFF * abs(float(moment)))


@dataclass(frozen=True)
class ReplayOutcome:
    """``proved``: the finished search met no model below the value to beat;
    ``refuted``: it met one (``best_risk``); neither: it was stopped. ``effort`` is said
    in the report (nodes or pairs, seconds)."""

    proved: bool
    refuted: bool
    best_risk: float
    effort: str


@dataclass(frozen=True)
class BoundReplay:
    """One kind of replay. ``applies(cert, dataset)``: whether it can re-derive the
    certificate's bound; ``run(cert, dataset, beat)``: the search with ``beat`` (the bound
    less the slack) as the value to beat. ``search`` and ``witness`` name the search and
    what refutes ("a rule", "two rules") in the report; ``unfinished`` is added when it was
    stopped. With ``rests_on_thresholds`` the re-derived bound is known no better than the
    recorded thresholds (taken on trust when they are)."""

    search: str
    witness: str
    applies: Callable[[Certificate, Dataset], bool]
    run: Callable[[Certificate, Dataset, float], ReplayOutcome]
    unfinished: str = ""
    rests_on_thresholds: bool = False
    #: ``too_large(cert, dataset)``: why a certificate of this kind is not replayed (its
    #: language beyond the stated size), said in the report; ``None``: it is
    too_large: Callable[[Certificate, Dataset], str | None] | None = None


# ---------------------------------------------------------------------- one rule
def _one_rule_too_large(cert: Certificate, ds: Dataset) -> str | None:
    """Why a one-rule squared-loss certificate is not replayed: the range search's prefix
    masks (every recorded threshold's mask over the rows) beyond the memory budget."""
    if cert.n_rules != 1 or cert.loss != "squared":
        return None
    from rulemip.boosting.boxsearch.range_search import mask_bytes_of
    from rulemip.budget import default_max_memory

    masks = mask_bytes_of(ds.n, cert.thresholds)
    if masks > default_max_memory():   # what box_search refuses (an unlimited budget)
        return (f"the exact box search's masks ({masks / 2**30:.1f} GiB for its thresholds "
                "and rows) are beyond the memory budget")
    return None


def _one_rule_applies(cert: Certificate, ds: Dataset) -> bool:
    return cert.n_rules == 1 and cert.loss == "squared" and _one_rule_too_large(cert, ds) is None


def _run_one_rule(cert: Certificate, ds: Dataset, beat: float) -> ReplayOutcome:
    from rulemip.certify.replay import replay_one_rule

    rep = replay_one_rule(cert.problem_on(ds), lower_bound=beat)
    return ReplayOutcome(rep.proved, rep.refuted, rep.best_risk,
                         f"{rep.nodes} nodes, {rep.seconds:.2f} s")


# ---------------------------------------------------------------------- two and three rules
def _kbox_too_large(k: int, max_boxes: int) -> Callable[[Certificate, Dataset], str | None]:
    """Why a k-rule squared-loss certificate is not replayed by the k-box search (its
    language beyond ``max_boxes`` boxes, or its table beyond the memory budget), if not."""

    def reason(cert: Certificate, ds: Dataset) -> str | None:
        if cert.n_rules != k or cert.loss != "squared":
            return None
        from rulemip.budget import default_max_memory
        from rulemip.formulations.sizes import count_boxes, kbox_table_bytes

        n_boxes = count_boxes(cert.problem_on(ds).language)
        if n_boxes > max_boxes:
            return (f"a replay of its language ({n_boxes} boxes) by the k-box search is "
                    f"beyond the {max_boxes} boxes verify replays for {k} rules")
        if kbox_table_bytes(n_boxes, ds.n) > default_max_memory():
            return "its language's box table is beyond the memory budget"
        return None

    return reason


def _kbox_applies(k: int, max_boxes: int) -> Callable[[Certificate, Dataset], bool]:
    """k rules, squared loss, a language of at most ``max_boxes`` boxes whose table fits
    the search's memory budget."""
    too_large = _kbox_too_large(k, max_boxes)
    return lambda cert, ds: cert.n_rules == k and cert.loss == "squared" and \
        too_large(cert, ds) is None


def _kbox_run(k: int, seconds: float) -> Callable[[Certificate, Dataset, float], ReplayOutcome]:
    """The k-box search's replay (k = 2: pairs, 3: triples) within ``seconds``."""

    def run(cert: Certificate, ds: Dataset, beat: float) -> ReplayOutcome:
        from rulemip.certify.replay_pairs import replay_three_rules, replay_two_rules

        replay = replay_two_rules if k == 2 else replay_three_rules
        rep = replay(cert.problem_on(ds), lower_bound=beat, time_limit=seconds)
        noun = "pairs" if k == 2 else "triples"
        return ReplayOutcome(rep.proved, rep.refuted, rep.best_risk,
                             f"{rep.scored} {noun} scored, {rep.seconds:.2f} s")

    return run


#: the replay kinds, tried in order (module docstring)
REPLAYS: tuple[BoundReplay, ...] = (
    BoundReplay("the exact box search", "a rule", _one_rule_applies, _run_one_rule,
                too_large=_one_rule_too_large),
    BoundReplay("the k-box search", "two rules",
                _kbox_applies(2, PAIR_REPLAY_MAX_BOXES), _kbox_run(2, PAIR_REPLAY_SECONDS),
                unfinished=f" in {PAIR_REPLAY_SECONDS:g} s", rests_on_thresholds=True),
    BoundReplay("the three-box search", "three rules",
                _kbox_applies(3, TRIPLE_REPLAY_MAX_BOXES),
                _kbox_run(3, TRIPLE_REPLAY_SECONDS),
                unfinished=f" in {TRIPLE_REPLAY_SECONDS:g} s", rests_on_thresholds=True,
                too_large=_kbox_too_large(3, TRIPLE_REPLAY_MAX_BOXES)),
)


def replay_lower_bound(cert: Certificate, ds: Dataset, slack: float,
                       thresholds: ClaimBasis) -> tuple[CheckResult, ClaimBasis | None] | None:
    """Replay the certificate's (finite) lower bound with the first kind of
    :data:`REPLAYS` that applies: the ``proof`` check, and the lower bound's basis when
    the replay re-derived it (``None``: it did not finish, the bound stays on trust).
    ``None`` when no kind applies. ``thresholds``: how the recorded thresholds are known."""
    lb = cert.lower_bound
    for kind in REPLAYS:
        if not kind.applies(cert, ds):
            reason = kind.too_large(cert, ds) if kind.too_large is not None else None
            if reason:
                return CheckResult("proof", True, f"lower bound taken on trust: {reason}"), \
                    None
            continue
        out = kind.run(cert, ds, lb - slack)
        if out.proved:
            check = CheckResult("proof", True, f"replayed: {kind.search} re-derived the "
                                f"lower bound {lb:.10g} from the data ({out.effort})")
            on_trust = kind.rests_on_thresholds and not thresholds.rederived
            basis = thresholds.basis if kind.rests_on_thresholds else REDERIVED
            return check, ClaimBasis(
                "lower bound", basis, f"replayed: {kind.search} re-derived it from the "
                "data, no solver involved"
                + (", over the recorded thresholds (taken on trust)" if on_trust else ""))
        if out.refuted:
            verb = "reaches" if kind.witness == "a rule" else "reach"
            return CheckResult("proof", False, f"replay refutes the lower bound: "
                               f"{kind.witness} {verb} risk {out.best_risk:.10g} < "
                               f"{lb:.10g}"), None
        return CheckResult("proof", True, "lower bound taken on trust: the replay did not "
                           f"finish{kind.unfinished}"), None
    return None
