"""What learning noise needs from the accountant (all of it without torch): training losses with
their gradients (:mod:`~accountant.learning.training_losses`,
:mod:`~accountant.learning.smooth_loss`), certification of a learned noise and its
baseline (:mod:`~accountant.learning.certification`), noise calibration for DP-SGD
(:mod:`~accountant.learning.calibration`) and the single-release LP optimum
(:mod:`~accountant.learning.optimal`)."""
