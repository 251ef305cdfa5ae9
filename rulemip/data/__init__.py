"""Data: the validated :class:`Dataset`, candidate thresholds, generators, bundled data."""

from rulemip.data.dataset import Dataset
from rulemip.data.datasets import bundled_path, load_bundled
from rulemip.data.encoding import EncodedColumn, FeatureEncoder
from rulemip.data.generators import alternating, friedman1, friedman2
from rulemip.data.thresholds import (
    candidate_thresholds,
    check_thresholds,
    feature_thresholds,
    threshold_groups,
)

__all__ = ["Dataset", "EncodedColumn", "FeatureEncoder", "alternating", "bundled_path",
           "candidate_thresholds", "check_thresholds", "feature_thresholds", "friedman1",
           "friedman2", "load_bundled", "threshold_groups"]
