"""Floating-point numerics shared by the accountants: the float64 constants the error
bounds are written in (:mod:`~accountant.numerics.floats`), directed rounding and certified
sums (:mod:`~accountant.numerics.directed`), the Gauss-Legendre rule
(:mod:`~accountant.numerics.quadrature`), log-space Gaussian and exponential masses with
their error bounds (:mod:`~accountant.numerics.gaussian`), and scipy and numba loaded where
first used (:mod:`~accountant.numerics.lazy`)."""
