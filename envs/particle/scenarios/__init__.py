"""The nine MPE scenarios (PettingZoo mpe2 1.1.x): each module holds a scenario's reward and
observer parts and its keyword constructor, which builds a `ParticleEnv` of them."""
