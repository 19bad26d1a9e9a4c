"""Running the CUDA binary tools that Triton's wheel bundles (cuobjdump, nvdisasm) on a cubin, without a GPU.

Standard library only: the compile check's worker loads it before it becomes the class worker's user.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


def run_on_cubin(cubin: bytes, *commands: list[str]) -> str:
    """What the first of `commands` (each a tool of Triton's wheel and its options; the cubin's path goes
    last) prints, where it succeeds and prints something; "" where none does or the tools are missing."""
    try:
        from triton.backends.nvidia import __file__ as nvidia_dir

        tools = Path(nvidia_dir).parent / "bin"
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            for tool, *options in commands:
                done = subprocess.run([str(tools / tool), *options, f.name], capture_output=True, text=True,
                                      timeout=60)
                if done.returncode == 0 and done.stdout:
                    return done.stdout
    except (OSError, subprocess.SubprocessError, ImportError):
        pass
    return ""
