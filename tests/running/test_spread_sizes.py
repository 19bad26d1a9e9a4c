"""Without a GPU, a grading's sizes run in a forked child per idle core (puzzles/grading/runs.py: idle_cores,
deal): the verdict is the same however many children run them, the sizes are dealt by what they cost, and a
timeout stops the grading whichever child met it. And the interpreter's memos (dtypes, block types, tensor
shapes) last one launch and give what Triton gives; a kernel is rewritten once before forking."""

import p02_constant_add_block as p02
import pytest

from puzzles import test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog
from puzzles.running.child import run_in_child as running_run_in_child


@pytest.fixture(params=[1, 2, 3])
def idle(request, monkeypatch):
    """Without a GPU the sizes go to a child per idle core: as many idle cores as the parameter."""
    import puzzles.grading.runs as running

    monkeypatch.setattr(running, "idle_cores", lambda: request.param)
    return request.param


def test_sizes_dealt_to_children_by_their_programs_then_by_what_they_took():
    from puzzles.grading import runs
    from puzzles.running.interpreter import RunOutput

    grids = [(4,), (2,), (2,), (1, 3), (8, 1)]
    cases = [type("Case", (), {"grid": g, "sizes": {"N0": 100 + i}})() for i, g in enumerate(grids)]
    assert runs.deal(cases, 1) == [[0, 1, 2, 3, 4]]
    # Largest first, each to the less loaded child: 8 | 4, then 3 and 2 to the 4 (9), the last 2 to the 8.
    assert runs.deal(cases, 2) == [[2, 4], [0, 1, 3]]  # each child's sizes in order
    assert len(runs.deal(cases, 9)) == 5  # never an empty child
    # Once they have run, what each took: size 1 (two programs, each a long loop) was the slow one.
    runs.remember_seconds(cases, [RunOutput(seconds=t) for t in (0.1, 0.5, 0.1, 0.1, 0.2)])
    assert runs.deal(cases, 2) == [[1], [0, 2, 3, 4]]


@pytest.mark.interpreter("without a GPU only (on a GPU the interpreter's runs are the access checks)")
@pytest.mark.parametrize("kernel, number", [(None, 10), (p02.add_mask2_kernel_no_mask, 2), (None, 18)])
def test_a_verdict_is_the_same_however_many_children_run_the_sizes(kernel, number, idle, monkeypatch):
    import puzzles.grading.runs as running

    forked = []
    monkeypatch.setattr(running, "run_in_child", lambda jobs, timeout: forked.append(len(jobs)) or
                        running_run_in_child(jobs, timeout))
    p = catalog.get(number)
    result = test(kernel or p.reference(), p.spec, quiet=True, seed=11)
    assert sum(forked) == len(p.sizes) and len(forked) == min(idle, len(p.sizes)), forked
    assert [o.sizes for o in result.outcomes] == [{**s, **{k: v for k, v in o.sizes.items() if k not in s}}
                                                  for s, o in zip(p.sizes, result.outcomes, strict=True)]
    if kernel is None:
        assert result.passed, str(result)
    else:
        assert [o.status for o in result.outcomes] == [
            "out of bounds" if s["N0"] % s["B0"] else "passed" for s in p.sizes], str(result)


def test_a_timeout_at_one_size_stops_the_grading_whichever_child_ran_it(idle):
    p = catalog.get(2)
    result = test(p02.add_mask2_kernel_forever, p.spec, quiet=True, timeout=1.0)
    assert not result.passed and "time" in str(result).lower()


def test_the_interpreters_dtype_table_lives_for_one_launch():
    # The interpreter's _get_np_dtype is answered from a table within a launch, and Triton's own is back after it.
    from triton.runtime import interpreter as triton_interpreter

    original = triton_interpreter._get_np_dtype
    p = catalog.get(5)
    assert test(p.reference(), p.spec, quiet=True, isolate=False).passed
    assert triton_interpreter._get_np_dtype is original


def test_block_types_built_within_a_launch_are_tritons_own_and_the_constructor_is_back_after(monkeypatch):
    # Within a launch a block type of an element type and shape seen before copies that one's attributes: they must
    # be what Triton computes. The keys are those of three references' launches (each key's first block type runs
    # the constructor, which records it); each is then built again within the memo, where it is copied.
    import triton.language as tl

    from puzzles.running.interpreter import memoized_block_types

    original = tl.core.block_type.__init__
    keys: list = []

    def record(self, element_ty, shape):
        original(self, element_ty, shape)
        keys.append((element_ty, list(shape)))

    monkeypatch.setattr(tl.core.block_type, "__init__", record)
    for number in (5, 9, 17):  # broadcasts, reductions and dots, split-K's atomics
        p = catalog.get(number)
        assert test(p.reference(), p.spec, quiet=True, isolate=False, compile_check=False).passed
        assert tl.core.block_type.__init__ is record  # the launch put back what it found
    monkeypatch.undo()
    assert len(keys) > 20
    with memoized_block_types():
        built = [(tl.core.block_type(*key), tl.core.block_type(*key)) for key in keys]
    assert tl.core.block_type.__init__ is original
    for (element_ty, shape), (first, copied) in zip(keys, built, strict=True):
        own = tl.core.block_type(element_ty, shape)
        assert vars(first) == vars(copied) == vars(own) and copied is not first, (vars(own), vars(copied))


def test_tensors_built_within_a_launch_have_tritons_own_shapes_and_the_constructor_is_back_after(monkeypatch):
    # Within a launch a tensor of a shape seen before copies that one's shape attributes: they must be what
    # Triton computes, beside its own handle, type and element type. The types are those of three references'
    # launches (scalars, pointers, blocks of every rank they use).
    import triton.language as tl

    from puzzles.running.interpreter import memoized_tensor_shapes

    original = tl.core.tensor.__init__
    types: list = []

    def record(self, handle, type):  # noqa: A002 - Triton's parameter name
        original(self, handle, type)
        types.append(type)

    monkeypatch.setattr(tl.core.tensor, "__init__", record)
    for number in (5, 9, 17):
        p = catalog.get(number)
        assert test(p.reference(), p.spec, quiet=True, isolate=False, compile_check=False).passed
        assert tl.core.tensor.__init__ is record
    monkeypatch.undo()
    assert len({repr(t) for t in types}) > 10

    def described(value) -> dict:
        return {k: (v if k in ("handle", "type") else repr(v)) for k, v in vars(value).items()}

    with memoized_tensor_shapes():
        built = [(tl.core.tensor(object(), t), tl.core.tensor(object(), t)) for t in types]
    assert tl.core.tensor.__init__ is original
    for t, (first, copied) in zip(types, built, strict=True):
        own = tl.core.tensor(copied.handle, t)
        assert described(copied) == described(own) and copied.type is t and copied.dtype == t.scalar
        assert first.handle is not copied.handle


def test_a_kernel_and_its_helpers_are_rewritten_once_in_the_forking_process_never_a_notebooks(tmp_path):
    # Triton's interpreter rewrites a function's syntax tree on its first call in a process: done before forking,
    # a kernel graded again (another seed, another test) finds it done in its child. A notebook's kernel is left to
    # the child: the rewrite would copy the interpreter's names into the learner's own globals.
    from triton.runtime.interpreter import InterpretedFunction

    from puzzles.running.interpreter import rewrite_before_forking

    source = ("import triton\nimport triton.language as tl\n\n@triton.jit\ndef twice(x):\n    return x + x\n\n"
              "@triton.jit\ndef kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):\n"
              "    i = tl.arange(0, B0)\n    tl.store(z_ptr + i, twice(tl.load(x_ptr + i, i < N0)), i < N0)\n")
    for name in ("a_module", "__main__"):
        path = tmp_path / f"{name.strip('_')}.py"
        path.write_text(source)
        scope = {"__name__": name, "__file__": str(path)}
        exec(compile(source, str(path), "exec"), scope)
        before = set(scope)
        rewrite_before_forking(scope["kernel"])
        functions = [scope["kernel"].fn, scope["twice"].fn]
        done = [fn in InterpretedFunction.rewritten_fn for fn in functions]
        assert done == ([True, True] if name == "a_module" else [False, False]), name
        if name == "__main__":
            assert set(scope) == before  # the learner's globals as they were
