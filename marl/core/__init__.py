"""The contract every environment and learner shares: the env API, spaces, the registry,
wrappers, batching kernels, `check_env`, and the learner/policy contract.
"""
