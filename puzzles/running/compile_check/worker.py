"""The compiler process (run as a script by puzzles/running/compile_check/pool.py): it rebuilds the learner's
functions from their source, runs the front end or the full compile for each item it is sent, and
answers with a verdict (cached on disk).

This file imports only the standard library at the top: it runs as a script and must not import
torch or `puzzles` (which would turn the interpreter on again). The modules it needs beside it
(puzzles/running/kernel_source.py, puzzles/running/compile_check/messages.py) are loaded by path.
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import sys
import threading
from pathlib import Path
from typing import Any

# Largest shared memory one block may use, per compute capability (bytes, opt-in limits).
SHARED_LIMIT = {75: 65536, 80: 166912, 86: 101376, 89: 101376, 90: 232448}
# A tt.dot of f32 operands that runs on the tensor cores (an MMA parent layout) in TF32, in the GPU IR.
TF32_DOT = r"tt\.dot [^\n]*inputPrecision = tf32 : tensor<[^\n]*?xf32, #ttg\.dot_op<\{opIdx = 0, parent = #mma"
# A tt.dot whose result (its accumulator) is float16: tl.dot(..., out_dtype=tl.float16), summed in half precision.
F16_ACCUMULATOR_DOT = r"tt\.dot [^\n]*-> tensor<[0-9x]*xf16"


def kernel_source() -> Any:
    """puzzles/running/kernel_source.py: loaded by path in the worker (which must not import `puzzles`)."""
    if "puzzles" in sys.modules:  # the grader's process
        from puzzles.running import kernel_source as module

        return module
    return load_by_path("puzzles_kernel_source", Path(__file__).parent.parent / "kernel_source.py")


def messages() -> Any:
    """puzzles/running/compile_check/messages.py: loaded by path in the worker, like kernel_source."""
    if "puzzles" in sys.modules:
        from puzzles.running.compile_check import messages as module

        return module
    return load_by_path("puzzles_compile_messages", Path(__file__).with_name("messages.py"))


def load_by_path(name: str, path: Path) -> Any:
    """A standard-library-only module, loaded from its file (once per process) without its package."""
    module = sys.modules.get(name)
    if module is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module

def main() -> None:  # pragma: no cover - runs in the worker process
    import queue

    import triton  # noqa: F401 - loads the compiler (with TRITON_INTERPRET=0)

    kind = os.environ.get("PUZZLES_COMPILE_WORKER", "full")
    if kind == "full":
        # The learner waits for the interpreted run and the front end: let them have the CPU.
        try:
            os.nice(10)
        except OSError:
            pass

    inbox: queue.Queue = queue.Queue()
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # Triton prints on failures; keep the reply stream clean
    # Started as root to become another user (the class grader's worker): no request is read before.
    switch = os.environ.get("PUZZLES_COMPILE_WORKER_UID") if os.geteuid() == 0 else None
    if switch:
        # What the warm-up writes as root goes to a folder of root's own in /tmp (whose sticky bit keeps
        # the other user from swapping it for a link), removed before the switch: the folder the other
        # user will use gets nothing it could not write to afterwards.
        import shutil
        import tempfile

        cache = os.environ.get("TRITON_CACHE_DIR")
        warm = tempfile.mkdtemp(prefix="compiler-warm-up-", dir="/tmp" if os.path.isdir("/tmp") else None)
        os.environ["TRITON_CACHE_DIR"] = warm
        warm_compiler(full=kind == "full")
        shutil.rmtree(warm, ignore_errors=True)
        become_user(switch)
        os.environ.pop("TRITON_CACHE_DIR")
        if cache is not None:
            os.environ["TRITON_CACHE_DIR"] = cache

    def read() -> None:
        stream = sys.stdin.buffer
        while True:
            head = stream.read(8)
            if len(head) < 8:
                inbox.put(None)
                return
            inbox.put(pickle.loads(stream.read(int.from_bytes(head, "little"))))

    threading.Thread(target=read, daemon=True).start()
    if not switch:
        warm_compiler(full=kind == "full")
    pending: list[tuple[int, dict, dict, int, dict]] = []  # (job, request, builder, index, item)
    built: dict[int, Any] = {}
    while True:
        block = not pending
        while True:
            try:
                request = inbox.get(block=block)
            except queue.Empty:
                break
            if request is None:
                return
            block = False
            pending += [(request["job"], request, {}, i, item) for i, item in request["items"]]
        # Front ends first (the grading cell waits for them), newest request first; a ping is
        # answered once nothing else is left.
        pending.sort(key=lambda p: (p[4]["stage"] != "front", p[4]["stage"] == "ping", -p[0]))
        job, request, _, index, item = pending.pop(0)
        if item["stage"] == "ping":
            data = pickle.dumps({"job": job, "index": index, "verdict": {}})
            out.write(len(data).to_bytes(8, "little") + data)
            out.flush()
            continue
        try:
            if job not in built:
                built.clear()
                for entry in request.get("path", []):  # the learner's own modules, as the grader sees them
                    if entry not in sys.path:
                        sys.path.append(entry)
                built[job] = kernel_source().rebuild_kernel(request["spec"])
            verdict = check_item(built[job], item)
        except Exception as exc:  # noqa: BLE001 - a kernel this check cannot rebuild is not failed for it
            verdict = {"skipped": f"{type(exc).__name__}: {exc}", "transient": True}
        if not verdict.get("transient"):
            store(request["cache"], item["key"], verdict)
        data = pickle.dumps({"job": job, "index": index, "verdict": verdict})
        out.write(len(data).to_bytes(8, "little") + data)
        out.flush()


def become_user(uid: str) -> None:  # pragma: no cover - runs in the worker process
    """Started as root by the class grader's worker (which becomes `uid` next): load what the
    checks need while every file is readable, then become `uid` before reading any request. A
    process that cannot is no compiler: it exits, and the kernels it would check fail unchecked."""
    kernel_source()
    messages()
    # What the checks import later, loaded while the files are readable (a Python under /root is not,
    # to that user): the cache's gzip, the listings' tempfile and re among them.
    import ast  # noqa: F401
    import base64  # noqa: F401
    import gzip  # noqa: F401
    import importlib.util  # noqa: F401
    import linecache  # noqa: F401
    import re  # noqa: F401
    import shutil  # noqa: F401
    import tempfile  # noqa: F401
    import textwrap  # noqa: F401
    import traceback  # noqa: F401

    import puzzles.running.cubin_tools  # noqa: F401 - the listings' tools

    try:
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))
    except (OSError, ValueError):
        os._exit(3)


def warm_compiler(full: bool) -> None:  # pragma: no cover - runs in the worker process
    """Compile a trivial kernel once: the first compile in a process pays for loading MLIR and
    LLVM (Triton's cache would answer a full compile without compiling: bypass it)."""
    import tempfile

    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = "import triton\nimport triton.language as tl\n@triton.jit\ndef _warm(x, B: tl.constexpr):\n" \
             "    tl.store(x + tl.arange(0, B), tl.arange(0, B))\n"
    path = Path(tempfile.gettempdir()) / "triton_puzzles_warm.py"
    try:
        import linecache

        linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))
        scope: dict[str, Any] = {"triton": triton, "tl": tl, "__name__": "_warm"}
        exec(compile(source, str(path), "exec"), scope)
        src = ASTSource(scope["_warm"], {"x": "*i32", "B": "constexpr"}, {"B": 16})
        if not full:
            front_end(src, GPUTarget("cuda", 80, 32))
            return
        saved = triton.knobs.compilation.always_compile
        triton.knobs.compilation.always_compile = True
        try:
            triton.compile(src, target=GPUTarget("cuda", 80, 32))
        finally:
            triton.knobs.compilation.always_compile = saved
    except Exception:  # noqa: BLE001 - only a warm-up
        pass


def store(cache: str, key: str, verdict: dict) -> None:  # pragma: no cover - runs in the worker process
    """The verdict as `key`.json; a full compile's listing (its IR, PTX and SASS, tens of kilobytes) beside
    it, compressed, as `key`.listing.json.gz: a verdict is read at every grading, a listing only when shown."""
    import gzip

    listing = verdict.get("listing")
    try:
        os.makedirs(cache, exist_ok=True)
        if listing is not None:
            tmp = Path(cache) / f"{key}.listing.json.gz.{os.getpid()}"
            tmp.write_bytes(gzip.compress(json.dumps(listing).encode(), compresslevel=5))
            tmp.replace(Path(cache) / f"{key}.listing.json.gz")
        tmp = Path(cache) / f"{key}.json.{os.getpid()}"
        tmp.write_text(json.dumps({k: v for k, v in verdict.items() if k != "listing"}))
        tmp.replace(Path(cache) / f"{key}.json")
    except OSError:
        pass


def signature_of(fn: Any, argspec: list[tuple],
                 special: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, Any]]:  # pragma: no cover
    """Triton's signature and constexprs for these arguments. `special` (a full compile's): what a real launch
    specializes on, parameter -> "D" (a pointer or integer Triton may take for a multiple of 16) or "1"
    (an integer equal to 1, which a launch compiles as the constant 1)."""
    signature, constexprs = {}, {}
    for param, arg in zip(fn.params, argspec, strict=False):
        name = param.name
        if (special or {}).get(name) == "1" and not param.is_constexpr:
            signature[name], constexprs[name] = "constexpr", 1
            continue
        if arg[0] == "default":
            value = param.default
            if value is inspect.Parameter.empty:
                raise TypeError(f"{fn.__name__}() is missing its argument {name}")
            arg = ("scalar", value)
        if arg[0] == "typed" and not param.is_constexpr:
            signature[name] = arg[1]
        elif param.is_constexpr:
            signature[name], constexprs[name] = "constexpr", arg[1]
        elif arg[0] == "ptr":
            signature[name] = "*" + arg[1]
        elif isinstance(arg[1], bool):
            signature[name] = "i1"
        elif isinstance(arg[1], int):
            signature[name] = "i32" if -(2**31) <= arg[1] < 2**31 else "i64"
        elif isinstance(arg[1], float):
            signature[name] = "fp32"
        elif arg[1] is None:
            signature[name], constexprs[name] = "constexpr", None
        else:
            raise TypeError(f"{fn.__name__}: cannot pass {arg[1]!r} as {name}")
    return signature, constexprs


def check_item(built: dict[str, Any], item: dict) -> dict:  # pragma: no cover - runs in the worker process
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    fn = built["root"]
    special = item.get("special") or {}
    signature, constexprs = signature_of(fn, item["args"], special)  # raises (skipped) when an argument is unknown
    target = GPUTarget("cuda", item["target"], 32)
    # A full compile compiles what a launch would: pointers and integers that are multiples of 16 marked so
    # (Triton's tt.divisibility), which decides how wide its loads and stores can be.
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if special.get(name) == "D" and signature.get(name) != "constexpr"}
    src = ASTSource(fn, signature, constexprs, attrs)
    options = item.get("options") or {}
    try:
        if item["stage"] == "front":
            found = front_end(src, target, options, item.get("forbid"))
            if found:
                return {"error": messages().forbidden_in_ir(found, built)}
            # The front end of Triton 3.8 and later lets a kernel's `return <value>` through (only the full compile
            # fails): say so at every size, as 3.5 to 3.7's front end does.
            returned = messages().kernel_returns_a_value(built["root_entry"])
            return {"error": returned} if returned is not None else {}
        import triton

        compiled = triton.compile(src, target=target, options=options)
    except CompilationError as exc:
        return {"error": messages().compilation_error(exc, built)}
    except Exception as exc:  # noqa: BLE001 - MLIR pass failures, ptxas errors
        returned = messages().kernel_returns_a_value(built["root_entry"])
        if returned is not None:  # MLIR says only "PassManager::run failed"
            return {"error": returned}
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "PassManager::run failed" in message:  # the MLIR dump went to stderr; say what the learner can change
            specialized = messages().warp_specialize_failed(built["root_entry"])
            if specialized is not None:
                return {"error": specialized}
        return {"error": {"message": f"{type(exc).__name__}: {message}"}}
    listing = listing_of(compiled)
    # Where each function was when compiled: the PTX's lines are these (Triton's own cache keys a kernel by its
    # source and first line, not its file: its `.file` paths may be an earlier cell's), and a later grading of
    # the same source elsewhere (a re-run cell, a line added above it) reads the listing from the cache.
    listing["functions"] = [{k: e[k] for k in ("name", "filename", "first_line", "def_line")} |
                            {"lines": len(e["source"].splitlines())} for e in built["by_src"].values()]
    return {"notes": needs(compiled, item["target"], listing["resources"]), "listing": listing}


def front_end(src: Any, target: Any, launch: dict | None = None,
               forbid: list[str] | None = None) -> list[tuple[str, str, int]]:  # pragma: no cover - in the worker
    """Python to Triton IR to GPU IR, without the LLVM and ptxas stages; returns the ops of `forbid`
    (triton.language names) found in the Triton IR as generated, before any pass: (name, file, line)."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    backend = make_backend(target)
    options = backend.parse_options(dict(launch or {}))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                         context)
    found = ops_in_ir(module.str(), forbid) if forbid else []
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options, src.language)
    metadata: dict[str, Any] = {}
    for ext in ("ttir", "ttgir"):
        module = stages[ext](module, metadata)
    return found


def ops_in_ir(text: str, names: list[str]) -> list[tuple[str, str, int]]:
    """(name, file, line) of each `tt.<name>` op in a printed Triton IR module, its location followed
    through the module's `#locN = loc(...)` aliases (named values wrap the file location)."""
    import re

    aliases = dict(re.findall(r"^(#loc\d*) = (loc\(.*\))\s*$", text, re.M))

    def place(loc: str, depth: int = 0) -> tuple[str, int] | None:
        at = re.match(r'loc\("((?:[^"\\]|\\.)*)":(\d+):\d+\)', loc)
        if at:
            return at.group(1), int(at.group(2))
        ref = re.search(r"#loc\d*", loc)
        if ref and depth < 20 and ref.group(0) in aliases:
            return place(aliases[ref.group(0)], depth + 1)
        return None

    found = []
    for name in names:
        for op in re.finditer(rf"= tt\.{re.escape(name)}\b[^\n]*?(loc\((?:#loc\d*|\"[^\n]*)\))\s*$", text, re.M):
            where = place(op.group(1))
            if where is not None:
                found.append((name, *where))
    return found


def listing_of(compiled: Any) -> dict[str, Any]:  # pragma: no cover - runs in the worker process
    """The compiled kernel as text, for `puzzles.compiled()` (puzzles/running/compiled_code/): each stage's
    listing, ptxas's resource usage (registers, stack), the launch options the compile used, and the cubin
    (base64): its SASS is disassembled only where a listing is read (`compiled_code.record.from_listing`),
    not for every kernel the compile check compiles (nvdisasm takes about half a second a kernel)."""
    import base64

    from puzzles.running.cubin_tools import run_on_cubin

    meta = compiled.metadata
    listing: dict[str, Any] = {
        "ttir": compiled.asm.get("ttir") or "", "ttgir": compiled.asm.get("ttgir") or "",
        "ptx": compiled.asm.get("ptx") or "", "sass": "", "resources": "",
        "name": getattr(meta, "name", ""), "num_warps": getattr(meta, "num_warps", 0),
        "num_stages": getattr(meta, "num_stages", 0), "shared": getattr(meta, "shared", 0) or 0}
    cubin = compiled.asm.get("cubin")
    if cubin:
        listing["cubin"] = base64.b64encode(cubin).decode("ascii")
        listing["resources"] = run_on_cubin(cubin, ["cuobjdump", "--dump-resource-usage"])
    return listing


def needs(compiled: Any, arch: int, usage: str = "") -> list[str]:  # pragma: no cover - runs in the worker process
    """Notes on what the compiled kernel needs: shared memory past the target's limit, spills (from ptxas's
    resource `usage`, as cuobjdump prints it); and a tl.dot of float32 blocks that runs in TF32 there."""
    import re

    notes = []
    if re.search(TF32_DOT, compiled.asm.get("ttgir") or ""):
        notes.append(messages().TF32_NOTE)
    if re.search(F16_ACCUMULATOR_DOT, compiled.asm.get("ttir") or ""):
        notes.append(messages().F16_ACCUMULATOR_NOTE)
    shared = getattr(compiled.metadata, "shared", 0) or 0
    limit = SHARED_LIMIT.get(arch)
    if limit and shared > limit:
        notes.append(f"on sm_{arch} the kernel needs {shared} bytes of shared memory, more than the {limit} a "
                     "block may use there: it would not launch (smaller blocks or fewer num_stages)")
    # Spilled registers live on the thread's stack (Triton kernels use none otherwise, but for the
    # arguments of a printf: print_if and tl.device_print).
    stack = re.search(r"STACK:(\d+)", usage)
    printing = "vprintf" in (compiled.asm.get("ptx") or "")
    if stack and int(stack.group(1)) > 0 and not printing:
        notes.append(f"on sm_{arch} the kernel spills registers ({stack.group(1)} bytes of stack per "
                     "thread): it runs, but slower (smaller blocks or more num_warps help)")
    return notes


if __name__ == "__main__":  # pragma: no cover - the worker
    main()
