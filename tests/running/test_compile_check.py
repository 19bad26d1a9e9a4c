"""The ahead-of-time compile check (CPU only, no GPU needed): kernels that only Triton's
interpreter accepts fail with the compiler's message at the learner's line; references pass."""

from __future__ import annotations

import inspect
import linecache

import p02_constant_add_block as p02
import p07_long_sum as p07
import pytest
import torch
import triton
import triton.language as tl
from kernel_collections import kernel_named

from puzzles import test
from puzzles.course import catalog
from puzzles.grading.cases import case_from_spec
from puzzles.grading.job import make_job
from puzzles.grading.signature import bind_arguments
from puzzles.running import compile_check
from puzzles.running.compile_check.messages import TF32_NOTE
from puzzles.running.compile_check.verdict import TF32_TOLERANCE
from puzzles.running.kernel import kernel_file

pytestmark = pytest.mark.interpreter("on a GPU the kernel is really compiled; no ahead-of-time check")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PUZZLES_COMPILE_CACHE", str(tmp_path / "compile-cache"))
    monkeypatch.delenv("PUZZLES_COMPILE_CHECK", raising=False)


def bad_line(kernel_or_fn) -> int:
    """The file line marked BAD_LINE in the kernel or helper's source."""
    fn = getattr(kernel_or_fn, "fn", kernel_or_fn)
    lines, first = inspect.getsourcelines(fn)
    return next(first + i for i, text in enumerate(lines) if "BAD_LINE" in text)


CONSTRUCTS = [  # kernel, puzzle, what the compiler says, the helper holding the bad line (if any)
    ("sum_kernel_dynamic_arange", 7, "arange's arguments must be of type tl.constexpr", None),
    ("add_mask2_kernel_lambda", 2, "Lambda", None),
    ("sum_kernel_scalar_accumulator", 7, "Loop-carried variable acc", None),
    ("add_mask2_kernel_global", 2, "Cannot access global variable OFFSET", None),
    ("add_mask2_kernel_nested_def", 2, "function defined inside the kernel", None),
    ("add_mask2_kernel_bad_helper", 2, "Cannot access global variable OFFSET", "_plus_offset_bad"),
    # Triton's own message is a bare `AssertionError:`, or does not say what to write instead.
    ("add_mask2_kernel_tuple_loop", 2, "a Triton tuple can only be indexed by a constant", None),
    ("add_mask2_kernel_break", 2, "no break or continue", None),
    ("add_mask2_kernel_if_on_block", 2, "tl.where(condition, a, b)", None),
    ("add_mask2_kernel_element_index", 2, "a block has no element access by position", None),
    ("add_mask2_kernel_iterate_block", 2, "a block cannot be iterated", None),
    ("add_mask2_kernel_name_in_one_branch", 2, "if y is assigned only inside an if", None),
    ("add_mask2_kernel_returns", 2, "a kernel cannot return a value", None),
]
# Kernels that Triton 3.7's interpreter fails too: the compiler's message (with what to write) replaces its own.
INTERPRETER_FAILS_TOO = {"add_mask2_kernel_nested_def", "add_mask2_kernel_element_index",
                         "add_mask2_kernel_iterate_block"}


@pytest.mark.parametrize(("name", "number", "says", "helper"), CONSTRUCTS, ids=[c[0] for c in CONSTRUCTS])
def test_interpreter_only_kernel_fails_with_the_compilers_message_and_line(name, number, says, helper):
    kernel = kernel_named(name)
    result = test(kernel, puzzle=number, quiet=True, seed=1, compile_check="full")
    assert not result.passed
    failure = result.first_failure
    assert failure.status == "compile error", str(result)
    assert "would not compile for a GPU" in failure.error.message
    if name not in INTERPRETER_FAILS_TOO:
        assert failure.error.message.startswith("runs in the interpreter but would not compile for a GPU: ")
    assert says in failure.error.message
    where = kernel_named(helper) if helper else kernel
    assert failure.error.line == bad_line(where), str(result)
    assert failure.error.filename == kernel_file(where)
    assert "BAD_LINE" in failure.error.source
    assert "Traceback" not in str(result) and "code_generator" not in str(result)
    # Every size fails the same way (the front end runs at each of them).
    assert all(o.status == "compile error" for o in result.outcomes if o.status != "not run")


def test_the_same_kernels_pass_without_the_check(monkeypatch):
    assert test(p02.add_mask2_kernel_lambda, puzzle=2, quiet=True, compile_check=False).passed
    monkeypatch.setenv("PUZZLES_COMPILE_CHECK", "0")
    assert test(p02.add_mask2_kernel_global, puzzle=2, quiet=True).passed


def test_helpers_and_constexpr_globals_compile():
    result = test(p02.add_mask2_kernel_good_helper, puzzle=2, quiet=True, compile_check="full")
    assert result.passed, str(result)


def test_a_tuple_indexed_by_a_static_range_variable_compiles():
    result = test(p02.add_mask2_kernel_tuple_static_range, puzzle=2, quiet=True, compile_check="full")
    assert result.passed, str(result)


def test_a_bare_assertion_from_the_front_end_becomes_words():
    result = test(p02.add_mask2_kernel_tuple_loop, puzzle=2, quiet=True, seed=1)
    message = result.first_failure.error.message
    assert "AssertionError" not in message and "tl.static_range" in message, message


def test_an_error_the_interpreter_already_reports_gets_no_compile_note(load_kernel):
    # A typo fails in the interpreter and in the compiler at the same line: one message, not a second
    # one saying it "runs in the interpreter" (it did not), and no "still compiling" note on a failure.
    kernel = load_kernel("@triton.jit\ndef add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):\n"
                         "    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)\n"
                         "    tl.store(z_ptr + offsets, tl.load(x_ptr + offset) + 10.0)\n", "add_mask2_kernel")
    result = test(kernel, puzzle=2, quiet=True, seed=1, compile_check="full")
    assert result.first_failure.status == "error" and "NameError" in result.first_failure.error.message
    assert result.notes == [], str(result)
    quick = test(kernel, puzzle=2, quiet=True, seed=1)
    assert not any("still running" in n for n in quick.notes), str(quick)


def test_a_construct_only_the_interpreter_accepts_leads_what_the_interpreter_then_did(load_kernel):
    # `if` on a block: the interpreter goes on and runs out of bounds two lines down at most sizes. The
    # `if` is the mistake; the out-of-bounds access is what the interpreter made of it.
    kernel = load_kernel("@triton.jit\ndef add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):\n"
                         "    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)\n"
                         "    if offsets < N0:\n"
                         "        tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)\n", "add_mask2_kernel")
    result = test(kernel, puzzle=2, quiet=True, seed=1)
    failure = result.first_failure
    assert failure.status == "compile error" and failure.error.source.strip() == "if offsets < N0:", str(result)
    assert "would not compile for a GPU" in failure.error.message and "tl.where" in failure.error.message
    assert f"went out of bounds at line {failure.error.line + 1}" in failure.error.message
    assert all(o.status == "compile error" for o in result.outcomes), str(result)


def _calls(p):
    kernel = p.reference()
    args_for = bind_arguments(make_job(kernel, p.spec, None))
    return kernel, [args_for(case_from_spec(p.spec, p, s, 1, i)) for i, s in enumerate(p.sizes)]


@pytest.mark.parametrize("p", catalog.all_puzzles(), ids=lambda p: p.id)
def test_every_reference_compiles_for_every_target(p):
    kernel, calls = _calls(p)
    check = compile_check.start(kernel, calls, p.min_sm, tf32_matters=p.rtol < TF32_TOLERANCE)
    assert check is not None
    targets = {item["target"] for item in check.items if item["stage"] == "full"}
    # sm_80 and sm_90, the T4 where the puzzle allows it, none below its oldest GPU (puzzle 32's fp8: sm_90 only).
    assert targets == {t for t in (75, 80, 90) if t >= p.min_sm} and 90 in targets
    report = check.report(wait_full=True)
    assert report.problems == [] and report.pending == []
    assert TF32_NOTE not in report.notes  # 11 and 12 dot float32 blocks in TF32, as their tolerance allows
    assert not any(v.get("skipped") for v in check.results.values()), check.results  # really compiled


def test_a_rerun_is_answered_from_the_cache():
    p = catalog.get(2)
    kernel, calls = _calls(p)
    first = compile_check.start(kernel, calls)
    first.report(wait_full=True)
    again = compile_check.start(kernel, calls)
    assert again.jobs == {}  # nothing sent to the compiler
    assert len(again.results) == len(again.items)


def test_shared_memory_past_a_targets_limit_is_a_note():
    kernel = catalog.get(11).reference()
    t = torch.empty(4)
    sizes = dict(N0=512, N1=512, N2=1, MID=512, B0=128, B1=128, B2=1, B_MID=128)
    report = compile_check.start(kernel, [([t, t, t], sizes)]).report(wait_full=True)
    assert report.problems == []
    assert any("sm_75" in n and "shared memory" in n for n in report.notes), report.notes



# Compile, and compute something else on a GPU: a tl.dot of float32 blocks runs in TF32 on tensor cores.
@triton.jit
def row_sums_by_a_float32_dot(x_ptr, z_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(z_ptr + r[:, None] * B + r[None, :], tl.dot(x, tl.full([B, B], 1.0, tl.float32)))


@triton.jit
def row_sums_by_an_ieee_dot(x_ptr, z_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    ones = tl.full([B, B], 1.0, tl.float32)
    tl.store(z_ptr + r[:, None] * B + r[None, :], tl.dot(x, ones, input_precision="ieee"))


def test_a_float32_dot_in_tf32_is_a_note_where_the_tolerance_is_tighter():
    """On sm_80/sm_90 a tl.dot of float32 blocks runs in TF32, exact float32 in the interpreter: a note for
    puzzles whose tolerance TF32 misses, none for the matmul puzzles (tf32_matters=False) or an ieee dot."""
    t = torch.empty(256)
    call = [([t, t], {"B": 16})]

    def notes(kernel, tf32_matters=True):
        return compile_check.start(kernel, call, tf32_matters=tf32_matters).report(wait_full=True).notes

    assert TF32_NOTE in notes(row_sums_by_a_float32_dot)
    assert TF32_NOTE not in notes(row_sums_by_a_float32_dot, tf32_matters=False)
    assert TF32_NOTE not in notes(row_sums_by_an_ieee_dot)


@pytest.mark.parametrize("kernel, number, words", [
    ("add_mask2_kernel_lambda", 2, "a lambda is not allowed in a kernel"),  # a graded file's body rules, first
    ("sum_kernel_scalar_accumulator", 7, "would not compile for a GPU"),  # the compile check
])
def test_grade_fails_an_interpreter_only_kernel(tmp_path, kernel, number, words):
    from puzzles.submissions.grade import grade

    name = catalog.get(number).kernel_name
    source = inspect.getsource(kernel_named(kernel).fn).replace(kernel, name)
    path = tmp_path / "answers.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n" + source)
    (g,) = grade([path], [catalog.get(number)])
    assert g.status == "failed"
    assert words in g.reason, g.reason
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "BAD_LINE" in text)
    assert f"at line {line}:" in g.reason
    linecache.checkcache(str(path))


def test_the_courses_debugging_helpers_compile():
    # print_if compiles to a tl.device_print under a program-id test (tests/running/test_debug.py reads the IR),
    # breakpoint_if to nothing; the check compiles them with the kernel, to the end, with no note (the
    # printf's argument buffer on the stack is no register spill).
    result = test(p02.add_mask2_kernel_debugging, puzzle=2, quiet=True, compile_check="full", efficiency=False)
    assert result.passed and result.notes == [], str(result)
    p = catalog.get(2)
    args_for = bind_arguments(make_job(p02.add_mask2_kernel_debugging, p.spec, None))
    check = compile_check.start(p02.add_mask2_kernel_debugging,
                                [args_for(case_from_spec(p.spec, p, p.canonical, 1, 0))])
    check.report(True)
    assert check.results and all("skipped" not in v and "error" not in v for v in check.results.values())


def test_sizes_that_compile_alike_share_one_check_and_all_fail():
    sizes = [{"N0": 4, "N1": 32, "T": 200, "B0": 1, "B1": 32}, {"N0": 5, "N1": 32, "T": 77, "B0": 1, "B1": 32}]
    p = catalog.get(7)
    kernel = p07.sum_kernel_dynamic_arange
    args_for = bind_arguments(make_job(kernel, p.spec, None))
    check = compile_check.start(kernel, [args_for(case_from_spec(p.spec, p, s, 1, i)) for i, s in enumerate(sizes)])
    assert [item["sizes"] for item in check.items if item["stage"] == "front"] == [[0, 1]]
    result = test(kernel, puzzle=7, sizes=sizes, quiet=True)
    assert [o.status for o in result.outcomes] == ["compile error", "compile error"], str(result)


def test_an_autotune_config_is_compiled_with_its_launch_options():
    from puzzles.running.kernel import ConfigLaunch

    p = catalog.get(20)
    tuner = p.reference()
    config = tuner.configs[0]
    launch = ConfigLaunch(tuner.fn, config)
    sizes = {**p.sizes[0], **config.kwargs}
    args_for = bind_arguments(make_job(launch, p.spec, p))
    check = compile_check.start(launch, [args_for(case_from_spec(p.spec, p, sizes, 1, 0))])
    assert all(item["options"]["num_warps"] == config.num_warps for item in check.items)
    report = check.report(wait_full=True)
    assert report.problems == [] and not any(v.get("skipped") for v in check.results.values())


def test_a_dead_worker_is_replaced():
    old = compile_check.worker_for("front")
    old.proc.kill()
    old.proc.wait()
    result = test(p02.add_mask2_kernel_lambda, puzzle=2, quiet=True)
    assert result.first_failure.status == "compile error", str(result)
    assert compile_check.worker_for("front") is not old


def test_a_kernel_the_compilers_process_cannot_rebuild_is_not_passed_unchecked():
    result = test(p02.add_mask2_kernel_default_from_a_dict, puzzle=2, quiet=True, seed=1)
    assert not result.passed and result.first_failure.status == "compile error", str(result)
    assert "could not be checked for a GPU" in result.first_failure.error.message
    assert "default value" in result.first_failure.error.message


class SilentWorker:
    """A compiler process that never answers: stopped (a kernel that kills it), or stuck."""

    def __init__(self, alive: bool) -> None:
        self.is_alive = alive

    def submit(self, spec, items, cache) -> int:
        return 1

    def wait(self, job, indices, seconds, into) -> None:
        pass

    def alive(self) -> bool:
        return self.is_alive


@pytest.mark.parametrize(("alive", "says"), [(False, "the compiler's process stopped during its front end"),
                                             (True, "its front end for sm_80 did not finish within 60 s")])
def test_a_size_whose_compile_gets_no_answer_fails(monkeypatch, alive, says):
    """A kernel whose compile never ends, or that stops the compiler's process, is not passed for
    the interpreter's verdict alone (in a notebook's cell and in `grade`)."""
    from puzzles.running.compile_check import checking

    monkeypatch.setattr(checking, "worker_for", lambda kind: SilentWorker(alive))
    for flag in (True, "full"):
        result = test(catalog.get(2).reference(), puzzle=2, quiet=True, seed=1, compile_check=flag)
        assert [o.status for o in result.outcomes] == ["compile error"] * len(result.outcomes), str(result)
        assert says in result.first_failure.error.message


def test_grade_fails_a_kernel_the_check_cannot_begin_on(monkeypatch):
    from puzzles.running.compile_check import verdict

    def cannot(*args, **kwargs):
        raise RuntimeError("no description")

    monkeypatch.setattr(verdict, "start", cannot)
    kernel = catalog.get(2).reference()
    assert test(kernel, puzzle=2, quiet=True, seed=1).passed  # a notebook's cell goes on without it
    result = test(kernel, puzzle=2, quiet=True, seed=1, compile_check="full")
    assert not result.passed
    assert "could not be checked for a GPU: RuntimeError: no description" in result.first_failure.error.message


def test_without_cache_reads_a_forged_cached_verdict_does_not_pass_a_kernel(tmp_path, monkeypatch):
    """The class grader's worker reads no cached verdict: a kernel runs as Python in its folder and
    could write "compiles" there for a kernel graded after it."""
    from puzzles.running.compile_check import settings

    kernel = p02.add_mask2_kernel_lambda
    assert test(kernel, puzzle=2, quiet=True, seed=1, compile_check="full").first_failure.status == "compile error"
    cached = list((tmp_path / "compile-cache").glob("*.json"))
    assert cached
    for path in cached:  # what a hostile kernel could write
        path.write_text("{}")
    assert test(kernel, puzzle=2, quiet=True, seed=1, compile_check="full").passed  # the forgery, read back
    monkeypatch.setattr(settings, "READ_CACHE", False)
    result = test(kernel, puzzle=2, quiet=True, seed=1, compile_check="full")
    assert result.first_failure.status == "compile error" and "Lambda" in result.first_failure.error.message


PROBES = [("add_mask2_kernel_asks_its_handle", None, "calls Python's `hasattr`"),
          ("add_mask2_kernel_asks_the_knobs", None, "reads `triton.knobs.runtime`"),
          ("add_mask2_kernel_helper_asks_the_class", "_plus_ten_when_interpreted", "reads `.__name__`"),
          ("add_mask2_kernel_compares_functions", None, "compares objects by identity")]


@pytest.mark.parametrize(("name", "helper", "says"), PROBES, ids=[p[0] for p in PROBES])
def test_a_kernel_that_asks_whether_it_is_interpreted_fails(monkeypatch, name, helper, says):
    """It compiles, and passes the interpreter (shown with the rule off): only its source tells."""
    import puzzles.grading as harness

    kernel = kernel_named(name)
    for flag in (True, "full"):
        result = test(kernel, puzzle=2, quiet=True, seed=1, compile_check=flag)
        assert not result.passed and result.error is not None and result.outcomes == [], str(result)  # never run
        error = result.error
        assert "a GPU would not run the same code" in error.message and says in error.message
        assert error.line == bad_line(kernel_named(helper) if helper else kernel)
    assert test(kernel, puzzle=2, quiet=True, seed=1, compile_check=False).passed  # a learner's own experiment
    monkeypatch.setattr(harness, "interpreter_probe_error", lambda kernel: None)
    assert test(kernel, puzzle=2, quiet=True, seed=1, compile_check="full").passed  # the hole the rule closes


def test_comparisons_of_dtypes_constexprs_and_none_pass():
    result = test(p02.add_mask2_kernel_fair_comparisons, puzzle=2, quiet=True, seed=1, compile_check="full")
    assert result.passed, str(result)


def test_a_kernel_that_reaches_the_interpreters_frames_never_runs():
    result = test(p02.add_mask2_kernel_reaches_a_frame, puzzle=2, quiet=True, seed=1)
    assert result.outcomes == [] and "reads `.f_back`, a Python object's insides" in result.error.message
    assert result.error.line == bad_line(p02.add_mask2_kernel_reaches_a_frame)


def test_a_kernel_calling_a_plain_python_function_never_runs(monkeypatch):
    """The interpreter would run the function's Python (anything at all), the compiler refuses it: the
    grader refuses it first, from the source. Without that rule the compile check still fails it."""
    import puzzles.grading as harness

    kernel = p02.add_mask2_kernel_plain_function
    result = test(kernel, puzzle=2, quiet=True, seed=1)
    assert result.outcomes == [] and "calls `_plus_ten_plain`, a plain Python function (put @triton.jit on it)" \
        in result.error.message
    assert result.error.line == bad_line(kernel)
    method = test(p02.add_mask2_kernel_method_of_an_object, puzzle=2, quiet=True, seed=1)
    assert method.outcomes == [] and "calls `HELPERS.plus_ten`, a plain Python function" in method.error.message
    monkeypatch.setattr(harness, "interpreter_probe_error", lambda kernel: None)
    failure = test(kernel, puzzle=2, quiet=True, seed=1, compile_check="full").first_failure
    assert failure.status == "compile error" and "_plus_ten_plain is a plain Python function" in failure.error.message
    assert failure.error.line == bad_line(kernel)


GROUP_CHILDREN = """
import os
from pathlib import Path
import puzzles
from puzzles.course import catalog
from puzzles.running import compile_check

p = catalog.get(1)
assert puzzles.test(p.reference(), p.spec, quiet=True).passed
assert compile_check.wait_idle(120)
me, group = os.getpid(), os.getpgrp()
kids = []
for stat in Path("/proc").glob("[0-9]*/stat"):
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if int(fields[1]) == me and int(fields[2]) == group:
        kids.append(stat.parent.name)
print("children in my group:", kids)
"""


def test_the_compilers_leave_a_jupyter_kernels_process_group(tmp_path):
    # A Jupyter kernel that shuts down signals every child in its process group and waits until none is left,
    # and a child that died unreaped counts: a compiler there held every kernel restart until Jupyter killed it.
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", GROUP_CHILDREN], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PUZZLES_COMPILE_CACHE": str(tmp_path / "cache")},
                          start_new_session=True)  # a group of its own, as a kernel's
    assert done.returncode == 0, done.stderr[-2000:]
    assert "children in my group: []" in done.stdout, done.stdout
