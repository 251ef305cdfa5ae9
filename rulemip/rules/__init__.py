"""Rules: :class:`Condition`, :class:`Rule`, :class:`RuleEnsemble`."""

from rulemip.rules.condition import Condition
from rulemip.rules.ensemble import RuleEnsemble, conditions_from_box
from rulemip.rules.rule import Rule

__all__ = ["Condition", "Rule", "RuleEnsemble", "conditions_from_box"]
