"""Front ends: the audit of a mechanism and its report (:mod:`~accountant.report.audit`),
plots, and the command line (``accountant audit``, ``accountant calibrate``; plugins such as
``accountant learn`` are found by entry point)."""
