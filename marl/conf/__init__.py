"""Hydra configs of `marl train` (env/, algo/, protocol/), read with `marl.run.config.compose`."""
