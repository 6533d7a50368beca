"""Releasing noise: answers on the noise grid (:mod:`~accountant.release.grid`) plus
exactly drawn grid noise (:mod:`~accountant.release.additive`), so that what is released
has exactly the law that is audited."""

from accountant.release.additive import Release, release
from accountant.release.grid import audited_sensitivity

__all__ = ["Release", "audited_sensitivity", "release"]
