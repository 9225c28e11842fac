"""Hidden tests for pytorch.tensors.views_and_layout (the catalog's contract checks)."""

import re

import pytest
import torch
from hypothesis import given, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           check_gradients, device_params)

# Each error case isolates one rule, so there are many of them; together they must not outweigh
# the value tests (a submission returning constants passes every one).
ERROR_CASE_POINTS = 0.5


LAYOUTS = ("contiguous", "reversed_strides", "storage_offset", "strided_last_dim")
sides = st.integers(1, 4)
seeds = st.integers(0, 2**16)


def with_layout(values: torch.Tensor, layout: str) -> torch.Tensor:
    """A tensor equal to ``values`` whose memory layout is ``layout`` (a copy, never ``values``)."""
    if layout == "contiguous":
        return values.clone()
    if layout == "reversed_strides":  # e.g. a transposed tensor: every stride out of order
        order = list(range(values.dim()))[::-1]
        return values.permute(order).contiguous().permute(order)
    if layout == "storage_offset":  # a slice of a bigger tensor: offset > 0, padded strides
        big = torch.zeros([s + 1 for s in values.shape], dtype=values.dtype)
        inner = (slice(1, None),) * values.dim()
        big[inner] = values
        return big[inner]
    if layout == "strided_last_dim":  # every other element: the last stride is 2
        big = torch.zeros(*values.shape[:-1], 2 * values.shape[-1], dtype=values.dtype)
        big[..., ::2] = values
        return big[..., ::2]
    raise AssertionError(layout)


def describe(t: torch.Tensor) -> str:
    return (f"x(shape={tuple(t.shape)}, stride={t.stride()}, offset={t.storage_offset()}, "
            f"contiguous={t.is_contiguous()})")


def call(what: str, fn, *args):
    """Run learner code; turn an unexpected error into a message that names the input."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{what} raised {type(exc).__name__}: {exc!s:.300}") from exc


def split_reference(x: torch.Tensor, h: int) -> torch.Tensor:
    d = x.shape[-1] // h
    return torch.stack([x[:, :, i * d:(i + 1) * d] for i in range(h)], dim=1)


def merge_reference(y: torch.Tensor) -> torch.Tensor:
    return torch.cat([y[:, i] for i in range(y.shape[1])], dim=-1)


def windows_reference(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    n = (x.shape[-1] - size) // step + 1
    return torch.stack([x[..., i * step:i * step + size] for i in range(n)], dim=-2)


def storage_ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def raises_naming_word(argname: str, fn, *args) -> None:
    """``fn(*args)`` raises ValueError whose message names ``argname`` as a word: a one-letter
    name such as ``x`` must not be found inside "expected"."""
    exc = assert_raises_naming(ValueError, argname, fn, *args)
    assert re.search(rf"(?<![A-Za-z0-9_]){re.escape(argname)}(?![A-Za-z0-9_])", str(exc)), (
        f"{getattr(fn, '__name__', 'the call')}(...) raised ValueError as expected, but its message "
        f"should name the argument {argname!r}: {exc!s:.200}")


# ------------------------------------------------------------------------ split / merge heads

@pytest.mark.parametrize("layout", LAYOUTS)
@given(b=sides, t=sides, h=sides, d=sides, seed=seeds)
def test_split_heads_values_over_shapes_and_layouts(impl, layout, b, t, h, d, seed):
    values = torch.randn(b, t, h * d, generator=torch.Generator().manual_seed(seed))
    x = with_layout(values, layout)
    what = f"split_heads({describe(x)}, n_heads={h})"
    out = call(what, impl.split_heads, x, h)
    assert_shape(out, (b, h, t, d), name=what)
    assert_close(out, split_reference(values, h), name=what)


@pytest.mark.parametrize("layout", LAYOUTS)
@given(b=sides, t=sides, h=sides, d=sides, seed=seeds)
def test_merge_heads_values_over_shapes_and_layouts(impl, layout, b, t, h, d, seed):
    values = torch.randn(b, h, t, d, generator=torch.Generator().manual_seed(seed))
    y = with_layout(values, layout)
    what = f"merge_heads(y(shape={tuple(y.shape)}, stride={y.stride()}))"
    out = call(what, impl.merge_heads, y)
    assert_shape(out, (b, t, h * d), name=what)
    assert_close(out, merge_reference(values), name=what)


@pytest.mark.points(2)
def test_merge_heads_accepts_attention_output(impl):
    # The usual producer of (B, H, T, D): a batched matmul, contiguous in (B, H, T, D) order.
    # After transpose(1, 2) its H and D dims are not adjacent, so .view() cannot merge them.
    q = torch.randn(2, 3, 5, 4)
    y = torch.softmax(q @ q.transpose(-1, -2), dim=-1) @ q
    what = "merge_heads(y) on a contiguous (2, 3, 5, 4) attention output"
    out = call(what, impl.merge_heads, y)
    assert_close(out, merge_reference(y), name=what)


@given(b=sides, t=sides, h=sides, d=sides, seed=seeds)
def test_split_merge_round_trips(impl, b, t, h, d, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h * d, generator=gen)
    assert_close(call("merge_heads(split_heads(x))", lambda: impl.merge_heads(impl.split_heads(x, h))),
                 x, name=f"merge_heads(split_heads(x{tuple(x.shape)}, {h}))")
    y = torch.randn(b, h, t, d, generator=gen)
    assert_close(call("split_heads(merge_heads(y))", lambda: impl.split_heads(impl.merge_heads(y), h)),
                 y, name=f"split_heads(merge_heads(y{tuple(y.shape)}), {h})")


def test_heads_gradients_match_finite_differences(impl):
    x = torch.randn(2, 3, 4)
    check_gradients(lambda t: impl.split_heads(t, 2), x, name="split_heads(x(2, 3, 4), 2)",
                    reference=lambda t: split_reference(t, 2))
    y = torch.randn(2, 2, 3, 2)
    check_gradients(impl.merge_heads, y, name="merge_heads(y(2, 2, 3, 2))",
                    reference=merge_reference)


@pytest.mark.parametrize("device", device_params(meta=True))
def test_heads_stay_on_device_and_dtype(impl, device):
    x = torch.randn(2, 5, 6, device=device, dtype=torch.bfloat16)
    out = impl.split_heads(x, 3)
    assert_shape(out, (2, 3, 5, 2), name="split_heads")
    assert_device(out, device, name="split_heads")
    assert out.dtype == torch.bfloat16, f"split_heads changed dtype to {out.dtype}"
    y = torch.randn(2, 3, 5, 2, device=device, dtype=torch.bfloat16)
    back = impl.merge_heads(y)
    assert_shape(back, (2, 5, 6), name="merge_heads")
    assert_device(back, device, name="merge_heads")
    assert back.dtype == torch.bfloat16, f"merge_heads changed dtype to {back.dtype}"
    if device != "meta":
        assert_close(out, split_reference(x, 3), name=f"split_heads on {device}")
        assert_close(back, merge_reference(y), name=f"merge_heads on {device}")


@pytest.mark.parametrize("n_heads", [1, 6], ids=["one-head", "E-heads"])
def test_split_heads_accepts_extreme_head_counts(impl, n_heads):
    x = torch.randn(2, 3, 6)
    what = f"split_heads(x(2, 3, 6), n_heads={n_heads})"
    out = call(what, impl.split_heads, x, n_heads)
    assert_close(out, split_reference(x, n_heads), name=what)
    assert_close(call(f"merge_heads({what})", impl.merge_heads, out), x,
                 name=f"merge_heads({what})")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("n_heads", [4, 0, -1, -2, 12],
                         ids=["not-dividing", "zero", "minus-1", "minus-2-divides", "more-than-E"])
def test_split_heads_rejects_bad_n_heads(impl, n_heads):
    raises_naming_word("n_heads", impl.split_heads, torch.randn(2, 3, 6), n_heads)


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("shape", [(3, 6), (2, 3, 2, 3), (6,)], ids=["2-d", "4-d", "1-d"])
def test_split_heads_rejects_x_not_3d(impl, shape):
    raises_naming_word("x", impl.split_heads, torch.randn(*shape), 2)


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("shape", [(2, 3, 6), (1, 2, 3, 2, 3)], ids=["3-d", "5-d"])
def test_merge_heads_rejects_y_not_4d(impl, shape):
    raises_naming_word("y", impl.merge_heads, torch.randn(*shape))


# --------------------------------------------------------------------------- sliding windows

@st.composite
def window_cases(draw):
    lead = draw(st.lists(st.integers(1, 3), max_size=2))
    length = draw(st.integers(1, 9))
    size = draw(st.integers(1, length))
    step = draw(st.integers(1, length + 1))
    return tuple(lead), length, size, step


@pytest.mark.parametrize("layout", LAYOUTS)
@given(case=window_cases(), seed=seeds)
def test_sliding_windows_match_sliced_reference(impl, layout, case, seed):
    lead, length, size, step = case
    values = torch.randn(*lead, length, generator=torch.Generator().manual_seed(seed))
    x = with_layout(values, layout)
    what = f"sliding_windows({describe(x)}, size={size}, step={step})"
    out = call(what, impl.sliding_windows, x, size, step)
    n = (length - size) // step + 1
    assert_shape(out, (*lead, n, size),
                 name=f"{what} (expected n = (L - size) // step + 1 = {n} windows)")
    assert_close(out, windows_reference(values, size, step), name=what)


@pytest.mark.parametrize("length, size, step, n", [(10, 3, 3, 3), (5, 5, 1, 1), (5, 5, 3, 1),
                                                   (7, 3, 2, 3), (8, 3, 2, 3), (6, 1, 1, 6),
                                                   (4, 2, 9, 1)])
def test_sliding_windows_count(impl, length, size, step, n):
    x = torch.arange(float(length))
    what = f"sliding_windows(arange({length}), size={size}, step={step})"
    out = impl.sliding_windows(x, size, step)
    assert_shape(out, (n, size), name=what)
    assert_close(out, windows_reference(x, size, step), name=what)


@pytest.mark.points(2)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sliding_windows_is_a_view(impl, layout):
    x = with_layout(torch.randn(3, 11), layout)
    what = f"sliding_windows({describe(x)}, size=4, step=3)"
    out = call(what, impl.sliding_windows, x, 4, 3)
    assert storage_ptr(out) == storage_ptr(x), (
        f"{what} is a copy: its memory is not x's. Return a view (no stack/cat/clone)")
    x.mul_(-2.0).add_(1.0)  # changes to x must show through the windows
    assert_close(out, windows_reference(x, 4, 3),
                 name=f"{what} after an in-place change to x (a view must see it)")


def test_sliding_windows_gradients_match_finite_differences(impl):
    # Overlapping windows (step < size): each element's gradient sums over its windows.
    check_gradients(lambda t: impl.sliding_windows(t, 3, 2), torch.randn(2, 7),
                    name="sliding_windows(x(2, 7), size=3, step=2)",
                    reference=lambda t: windows_reference(t, 3, 2))


@pytest.mark.parametrize("device", device_params(meta=True))
def test_sliding_windows_stay_on_device_and_dtype(impl, device):
    x = torch.arange(24, device=device).reshape(2, 12)
    out = impl.sliding_windows(x, 5, 2)
    assert_shape(out, (2, 4, 5), name="sliding_windows(x(2, 12) int64, 5, 2)")
    assert_device(out, device, name="sliding_windows")
    assert out.dtype == torch.int64, f"sliding_windows changed dtype int64 to {out.dtype}"
    if device != "meta":
        assert_close(out.cpu(), windows_reference(x.cpu(), 5, 2), name="sliding_windows on int64")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("size, step, argname", [(0, 1, "size"), (-1, 1, "size"), (7, 1, "size"),
                                                  (3, 0, "step"), (3, -1, "step"), (6, 0, "step")],
                         ids=["size-0", "size-negative", "size-L+1", "step-0", "step-negative",
                              "size-L-step-0"])
def test_sliding_windows_reject_bad_arguments(impl, size, step, argname):
    raises_naming_word(argname, impl.sliding_windows, torch.randn(2, 6), size, step)
