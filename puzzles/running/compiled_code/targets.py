"""The GPU targets whose compiled code the course shows: sm_75 (the T4), sm_80 (A100 class), sm_90 (H100 class)."""

from __future__ import annotations

TARGETS = {75: "sm_75", 80: "sm_80", 90: "sm_90"}
# The course's GPUs by target: what a learner knows them as.
TARGET_GPUS = {75: "T4, Colab's free GPU", 80: "A100 class", 90: "H100 class"}


def target_number(target: str | int) -> int:
    """90 for "sm_90", "sm90", "90" or 90; a ValueError naming the targets otherwise."""
    text = str(target).lower().replace("sm_", "").replace("sm", "")
    if text.isdigit() and int(text) in TARGETS:
        return int(text)
    raise ValueError(f"target {target!r}: the compiled code is shown for {', '.join(map(repr, TARGETS.values()))}")
