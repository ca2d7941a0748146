"""The training machinery learners share: networks, the run loop (segments of
scan(vmap(step)) over seeds), the evaluator, checkpoints and vectorised hyperparameters.
"""
