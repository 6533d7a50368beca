"""Analytic mechanisms as PrivacyBuckets releases (placeholder until CDF bucketing lands)."""

from __future__ import annotations

from typing import Any

__all__ = ["analytic_release"]


def analytic_release(mechanism: Any):
    """A release source for an analytic mechanism, or ``None`` if it is not one."""
    return None
