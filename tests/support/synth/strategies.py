"""Hypothesis strategies for the shapes of synthetic runs (tests only)."""
from __future__ import annotations

from hypothesis import strategies as st

from tests.support.synth.generate import GenConfig


@st.composite
def gen_configs(draw: st.DrawFn, min_lines: int = 20, max_lines: int = 1_500,
                idempotent: bool | None = None, plantable: bool = False) -> GenConfig:
    """Runs from a few dozen lines to a few thousand, with every kind of mess
    the generator knows switched on or off. `plantable`: big and busy enough
    for every planter (consumers that poll several records, followers)."""
    if plantable:
        min_lines = max(min_lines, 400)
    return GenConfig(
        seed=draw(st.integers(0, 2**32 - 1)),
        lines=draw(st.integers(min_lines, max_lines)),
        partitions=draw(st.integers(1, 4)),
        producers=draw(st.integers(1, 12)),
        consumers=draw(st.integers(1 if plantable else 0, 3)),
        nodes=draw(st.integers(2 if plantable else 1, 4)),
        idempotent=draw(st.booleans()) if idempotent is None else idempotent,
        p_fail=draw(st.sampled_from([0.0, 0.03, 0.2])),
        p_info_unappended=draw(st.sampled_from([0.0, 0.02, 0.2])),
        p_info_acklost=draw(st.sampled_from([0.0, 0.02, 0.2])),
        p_timeout_appended=draw(st.sampled_from([0.0, 0.01, 0.1])),
        p_retry_dup=draw(st.sampled_from([0.0, 0.05, 0.3])),
        p_offset_gap=draw(st.sampled_from([0.0, 0.0, 0.05])),
        nemesis_rate=draw(st.sampled_from([0.0, 0.01, 0.05])),
        p_kill=draw(st.sampled_from([0.3, 0.8, 1.0])),
        consumer_share=draw(st.sampled_from([0.35, 0.6] if plantable else [0.1, 0.35, 0.6])),
        poll_batch=draw(st.integers(4 if plantable else 1, 30)),
        p_crash=draw(st.sampled_from([0.0, 0.01, 0.1])),
        p_reassign=draw(st.sampled_from([0.0, 0.02, 0.1])),
        dangling=draw(st.booleans()),
        uncommitted_tail=draw(st.booleans()),
        lagging_follower=draw(st.booleans()),
        stale_follower=draw(st.booleans()),
        group=draw(st.booleans()),
    )
