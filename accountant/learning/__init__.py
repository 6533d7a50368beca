"""What learning noise needs from the accountant (all of it without torch): training losses with
their gradients (:mod:`~accountant.learning.training_losses`,
:mod:`~accountant.learning.smooth_loss`), certification of a learned noise
(:mod:`~accountant.learning.certification`), its truncated-Gaussian baseline
(:mod:`~accountant.learning.gaussian_baseline`), the KL divergence of two noises
(:mod:`~accountant.learning.divergence`), noise calibration for DP-SGD
(:mod:`~accountant.learning.calibration`) and the single-release LP optimum
(:mod:`~accountant.learning.optimal`)."""
