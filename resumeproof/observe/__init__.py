"""The observer: a room of the trainer's side that runs inside someone else's process, injected by the verifier
(observe/site/sitecustomize.py). It imports torch and the formats only, and never raises into the host program;
its records' format is common/observation.py. Nothing imports this package: sitecustomize loads its modules by
their paths, so that a trainer whose environment lacks resumeproof (or holds another version) is watched too."""
