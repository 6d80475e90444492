"""infra-compile: a declarative infrastructure design compiler for ML/GPU platforms.

Stages (each a pure function between frozen values):
Document -> Spec -> Candidates -> Problem -> Plan -> Artifacts.
"""

__version__ = "0.1.0"
