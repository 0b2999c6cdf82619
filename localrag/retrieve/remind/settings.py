"""ReMindRAG's settings, the config's [remind] section (localrag/config.py reads it into
``Settings.remind``); docs/algorithms.md gives the paper's values beside these defaults.

Kept apart from the strategy's code: config.py imports this module, so it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# a mode setting takes only its words (config_values.check_choices)
RankMode = Literal["graph", "collected-first"]  # remind.rank (strategy.py)
ZeroJumpMode = Literal["reinforce", "skip"]  # remind.zero_jump


@dataclass
class RemindSettings:
    seeds: int = 2
    max_jumps: int = 10
    max_llm_calls: int = 20
    summary_threshold_tokens: int = 350
    seed_passages: int = 1  # nearest passages seeded too: ReMindRAG's anchors share the entity collection (R3)
    max_iterations: int = 0  # loop iterations, backtracks included; 0 = 2 × max_jumps (R5)
    choice_attempts: int = 3  # next-node and labelling tries, with a corrective message after each bad one (R14)
    max_candidates: int = 12  # candidate edges shown per next-node call, best w + query similarity first
    prompt_passage_chars: int = 600  # one passage (or its summary) in a prompt is cut to this
    prompt_chars: int = 6000  # all passages of one prompt together
    summary_max_tokens: int = 200
    # a question whose recalled route is strong (every edge >= memory.skip_above) skips the walk
    trust_recall: bool = True
    # final ranking: "graph" (the no-LLM graph fusion, with the walk's passages fused in at
    # collected_weight) or "collected-first" (the paper: walked passages, then dense backfill)
    rank: RankMode = "graph"
    collected_weight: float = 0.3
    keep_top: int = 2  # as neuropath.keep_top: the fusion's first passages keep their places
    # with rank "graph": a walk the judge never found sufficient (budget spent, model stopped,
    # caps reached) is exploration the model did not vouch for; its passages are set aside and
    # only those recalled from memory are fused (docs/benchmarks.md "NeuroPath and remind: how the constants were chosen")
    confirmed_only: bool = True
    zero_jump: ZeroJumpMode = "reinforce"  # R15, memory alone was judged sufficient: "reinforce" its edges, or "skip" (the code)
