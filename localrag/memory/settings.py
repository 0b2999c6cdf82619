"""Edge memory's settings, the config's [memory] section (localrag/config.py reads it into
``Settings.memory``), which NeuroPath and remind share (edges.py, retrieve/neuropath/recall.py).

Kept apart from the memory's code: config.py imports this module, so it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PenaltyMode = Literal["intended", "off"]  # memory.penalty (edges.py); a mode setting takes only its words


@dataclass
class MemorySettings:
    enabled: bool = True
    # False: memory is written but not read (a question whose last answer was marked wrong runs full retrieval)
    read: bool = True
    alpha: float = 0.1
    lam: float = 0.5
    penalty: PenaltyMode = "intended"
    knn_recall: bool = True  # also recall edges whose memory is nearest the query (vec0 KNN), not only from seeds
    knn_k: int = 8
    max_depth: int = 3  # recall DFS depth from a seed
    # recalled paths whose weakest read-out reaches this replace path tracking altogether
    skip_above: float = 0.55
