"""What `torch.compile` makes of a puzzle's spec: the code inductor writes, and its speed (puzzle 22).

On a CUDA GPU, `compiled_code(22)` compiles the puzzle's spec at its perf size and returns inductor's
output code, read live (`torch._inductor.utils.run_and_get_code`): the Python wrapper that allocates
the buffers and calls the kernels, and the source of each Triton kernel it generated. Without a GPU
inductor would write C++ for the CPU, which is not the lesson, so the course ships a capture made on a
GPU (`puzzles/course/captures/pNN_inductor.json`: the code, the device, torch's and Triton's versions,
and the command that refreshes it); `compiled_code` returns that one and says so in its first lines.

    python -m puzzles.learner.inductor_code 22      (on a GPU: refresh the shipped capture)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from puzzles.course import catalog
from puzzles.course.amounts import size_text
from puzzles.course.spec import call_spec
from puzzles.grading.inputs import draw_inputs
from puzzles.grading.perf import bench, time_compiled
from puzzles.running.kernel import on_gpu

CAPTURES = Path(__file__).resolve().parents[1] / "course" / "captures"
REFRESH = "python -m puzzles.learner.inductor_code {number}"


def capture_path(number: int) -> Path:
    return CAPTURES / f"p{number:02d}_inductor.json"


def kernels_in(code: str) -> tuple[list[str], list[str]]:
    """(the Triton kernels inductor generated, the library calls it makes instead: `extern_kernels.mm`
    is cuBLAS), each in the order the code defines or calls them."""
    kernels = list(dict.fromkeys(re.findall(r"^def (triton_\w+)\(", code, flags=re.MULTILINE)))
    calls = re.findall(r"\b(extern_kernels\.\w+)\(", code)
    return kernels, calls


def _compile_inputs(number: int) -> tuple[Any, list[Any], dict[str, int]]:

    p = catalog.get(number)
    sizes = dict(p.perf_size or p.canonical)
    inputs, _ = draw_inputs(p.spec, sizes, seed=p.number, device="cuda")
    return p, inputs, sizes


def capture(number: int) -> dict[str, Any]:
    """On a GPU: compile the puzzle's spec at its perf size and return inductor's code with where it was made."""
    import torch
    import triton
    from torch._inductor.utils import run_and_get_code


    p, inputs, sizes = _compile_inputs(number)
    torch._dynamo.reset()  # a fresh compile: the code comes back only from a compile, not from dynamo's cache
    compiled = torch.compile(p.spec)
    _, sources = run_and_get_code(lambda *args: call_spec(compiled, list(args), sizes), *inputs)
    return {"puzzle": number, "spec": p.spec_name, "sizes": sizes, "device": torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": triton.__version__, "command": REFRESH.format(number=number),
            "code": "\n".join(sources)}


def shipped(number: int) -> dict[str, Any]:
    """The capture made on a GPU that ships with the course."""
    return json.loads(capture_path(number).read_text())


def compiled_code(number: int) -> str:
    """Inductor's code for the puzzle's spec: compiled now on a GPU, else the shipped capture (its first
    lines say where and with which versions it was made)."""

    if on_gpu():
        return capture(number)["code"]
    saved = shipped(number)
    size = ", ".join(f"{k}={v}" for k, v in saved["sizes"].items())
    return (f"# No GPU here: inductor's code for {saved['spec']} at {size}, captured on a {saved['device']} with "
            f"torch {saved['torch']} and Triton {saved['triton']}\n# (refreshed on a GPU by `{saved['command']}`)\n\n"
            + saved["code"])


def compare_with_compiled(number: int) -> str:
    """On a GPU: the spec's time eagerly and compiled at the perf size (the compile itself not counted);
    elsewhere, a line saying it needs one. Returned as text for the notebook to print."""
    if not on_gpu():
        return "Timing needs a CUDA GPU; here the notebook reads the capture shipped with the course."

    p, inputs, sizes = _compile_inputs(number)
    eager = bench(lambda: call_spec(p.spec, inputs, sizes)) * 1000
    compiled, why = time_compiled(p.spec, inputs, sizes, key=("inductor_code", number))  # its compile not timed
    if compiled is None:
        return f"{p.spec_name} at {size_text(sizes)}: eager {eager:.1f} us; torch.compile failed: {why}"
    fast = compiled * 1000
    return (f"{p.spec_name} at {size_text(sizes)}: eager {eager:.1f} us, torch.compile {fast:.1f} us "
            f"({eager / fast:.2f}x faster compiled)")


def main(argv: list[str]) -> int:
    """Refresh the shipped capture of each puzzle named (on a GPU)."""

    if not argv or not all(a.isdigit() for a in argv):
        print(f"usage: {REFRESH.format(number='NUMBER')} [NUMBER ...]")
        return 2
    if not on_gpu():
        print("The capture is inductor's code for a CUDA GPU: refresh it on a machine with one.")
        return 1
    for number in map(int, argv):
        saved = capture(number)
        path = capture_path(number)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(saved, indent=1) + "\n")
        kernels, calls = kernels_in(saved["code"])
        print(f"wrote {path}: Triton kernels {kernels}, library calls {calls}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
