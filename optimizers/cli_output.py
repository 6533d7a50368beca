"""What ``accountant learn`` prints: the certified result, the baseline, the training
bound's bias and the verdict (:mod:`optimizers.cli` runs the command)."""

from __future__ import annotations

from optimizers.results import LearnedNoise

__all__ = ["print_result", "training_lines", "verdict_lines"]


def verdict_lines(result: LearnedNoise) -> list[str]:
    """What is returned, and whether it met the target, in words."""
    if result.beats_baseline is None:
        returned = "returned: the learned noise (not compared with a truncated Gaussian)"
    elif result.baseline is None:
        returned = (
            "returned: the learned noise (no truncated Gaussian of the range reaches its delta)"
        )
    elif result.returned == "learned":
        returned = "returned: the learned noise, which beats the best truncated Gaussian"
    else:
        returned = "returned: the truncated Gaussian; the learned noise does not beat it (see note)"
    if result.target_delta is None:
        target = "target: none (the paper's objective)"
    else:
        relation = "<=" if result.met_target else ">"
        verdict = "met" if result.met_target else "MISSED"
        target = (
            f"target: {verdict} (certified delta {result.delta:.6g} {relation} "
            f"target {result.target_delta:.6g})"
        )
    return [returned, target]


def training_lines(result: LearnedNoise) -> list[str]:
    """The training bound at the best epoch, its bias against the certified delta, and
    the refinements of the bucket width, in words."""
    if result.training_bound is None:
        return []
    if result.training_width is None:
        where = f"{result.problem.loss}"
    else:
        where = f"smooth {result.problem.loss}, bucket width {result.training_width:.4g}"
    bias = result.training_bias
    ratio = "certified delta 0" if bias is None else f"bias {bias:.4f} x the certified delta"
    lines = [f"training bound ({where}) at the best epoch: {result.training_bound:.6e}, {ratio}"]
    for step in result.refinements:
        lines.append(
            f"  bucket width {step.width:.4g} -> {step.new_width:.4g} at epoch {step.epoch} "
            f"(training bound {step.training_bound:.4e} vs certified {step.certified_delta:.4e})"
        )
    return lines


def print_result(result: LearnedNoise, summary: dict) -> None:
    problem = result.problem
    pair = "DP-SGD" if problem.q is not None else "additive"
    print(
        f"learned noise on [-{problem.bound:g}, {problem.bound:g}] (step {problem.step:g}), "
        f"{pair}, eps = {problem.epsilon:g}, n = {problem.times}, training bound {problem.loss}"
    )
    if result.stopped_by:
        print(f"stopped by {result.stopped_by} after {result.epochs_run} epochs; best kept")
    rows = [("learned noise", result.learned.delta_upper, summary["learned_utility"])]
    if result.baseline is not None:
        base = result.baseline
        label = f"best truncated Gaussian (sigma {base.sigma:.4g})"
        rows.append((label, base.certificate.delta_upper, base.utility))
    width = max(len(r[0]) for r in rows) + 2
    print(f"{'':{width}}{'certified delta':>18}{'U_' + problem.utility:>12}")
    for label, delta, utility in rows:
        print(f"{label:{width}}{delta:>18.6e}{utility:>12.6f}")
    if "lp_optimum_utility" in summary:
        print(
            f"{'LP optimum, same delta':{width}}{'':>18}{summary['lp_optimum_utility']:>12.6f}"
            f"   (returned / optimum = {summary['utility_over_lp_optimum']:.5f})"
        )
    if result.baseline is None:
        print(f"baseline: {result.baseline_note}")
    for line in training_lines(result):
        print(line)
    for line in verdict_lines(result):
        print(line)
    print(
        f"{result.epochs_run} epochs in {result.seconds:.1f} s of training, "
        f"{summary['total_seconds']:.1f} s in all (best epoch {result.best_epoch})"
    )
