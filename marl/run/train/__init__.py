"""The run itself: `marl train`'s config composed (`compose`), checked (`settings`), looked up in
the registry (`lookup`) and resolved once into a `RunConfig` (`resolve`, `config`), trained into
its folder (`execute`, from `command`), with what the folder records of it (`summary`,
`provenance`, `transfer`, `loggers`) and what `marl list` and `marl train --help` say (`catalog`).
"""
