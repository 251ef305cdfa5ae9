"""Rule boosting ([OGB], docs/explanation/boosting.md): objectives gs/gb/xgb/ogb,
greedy/beam/branch-and-bound
rule search, stagewise/xgb/corrective weight updates, and :class:`RuleBooster` with the
presets SGS, SGB, SXB, CGB and COB."""

from rulemip.boosting.booster import PRESETS, BoostingRound, RuleBooster
from rulemip.boosting.objectives import OBJECTIVES, OrthonormalBasis, make_objective
from rulemip.boosting.search import SEARCHES, find_rule
from rulemip.boosting.space import SearchResult, SearchSpace
from rulemip.boosting.weights import WEIGHT_UPDATES

__all__ = ["OBJECTIVES", "PRESETS", "SEARCHES", "WEIGHT_UPDATES", "BoostingRound",
           "OrthonormalBasis", "RuleBooster", "SearchResult", "SearchSpace", "find_rule",
           "make_objective"]
