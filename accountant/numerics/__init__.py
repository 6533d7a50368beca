"""Floating-point numerics shared by the accountants: directed rounding and certified
sums (:mod:`~accountant.numerics.directed`), log-space Gaussian and exponential masses
with their error bounds (:mod:`~accountant.numerics.gaussian`), and scipy and numba loaded
where first used (:mod:`~accountant.numerics.lazy`)."""
