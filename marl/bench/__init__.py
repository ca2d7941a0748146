"""Throughput: environments and training loops measured side by side with peers."""
