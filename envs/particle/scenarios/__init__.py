"""The nine MPE scenarios (PettingZoo mpe2 1.1.x), each a `ParticleEnv` subclass."""
