"""Hydra configs of `marl train` (env/, algo/, protocol/), read with `marl.config.compose`."""
