from callbacks.convergence import StopOnConvergence

__all__ = ["StopOnConvergence"]
