from callbacks.throughput import ThroughputMonitor

__all__ = ["ThroughputMonitor"]
