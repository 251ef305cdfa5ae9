"""Shared fixtures and the skip logic for optional solver backends."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
