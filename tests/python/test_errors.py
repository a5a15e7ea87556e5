"""Errors as Python exceptions: the right class, a message that names the
operation, the shapes/dtypes, this file and the line of the offending call
(not kiln's own files), and never a crash on bad input of any kind.

Each failing call stays on the line right after its `with raises_at(...)`.
"""

import math

import numpy as np
import pytest

import kiln as kn
from conftest import caller_line, raises_at

A23 = kn.zeros((2, 3))
A43 = kn.zeros((4, 3))
I3 = kn.arange(1, 4)
FLAGS = kn.arange(2) == 0

BAD_INPUT = (TypeError, ValueError)


# ---- The hierarchy ------------------------------------------------------------------------------


def test_error_classes():
    assert issubclass(kn.Error, RuntimeError)
    for name in ("ConcretizationError", "LeakedTracerError", "DonatedArrayError", "StormError", "AllocationError"):
        cls = getattr(kn, name)
        assert issubclass(cls, kn.Error), name
        assert cls is not kn.Error
    assert kn.Error.__module__ == "kiln"


# ---- Messages name the operation, shapes, dtypes and the user's line ----------------------------


def test_operator_shape_mismatch():
    with raises_at(kn.Error, "[add]", "[2,3]", "[4,3]", "broadcast", "hint"):
        A23 + A43
    with raises_at(kn.Error, ("[mul]", "[multiply]"), "[2,3]", "[3,2]"):
        A23 * kn.zeros((3, 2))
    with raises_at(kn.Error, "[less]", "[2,3]", "[4,3]"):
        A23 < A43
    with raises_at(kn.Error, "[add]", "[2,3]", "[4,3]"):
        kn.add(A23, A43)


def test_in_place_operator_shape_mismatch():
    x = A23
    with raises_at(kn.Error, "[add]", "[2,3]", "[4,3]"):
        x += A43


def test_bad_axis():
    with raises_at(kn.Error, "[sum]", "axis 2", "[2,3]"):
        kn.sum(A23, axis=2)
    with raises_at(kn.Error, "axis -3", "[2,3]"):
        kn.nn.softmax(A23, axis=-3)
    with raises_at(kn.Error, ("[concatenate]", "[concat]"), "axis 5"):
        kn.concat([A23, A23], axis=5)
    with raises_at(kn.Error, "[argmax]", "axis 7"):
        kn.argmax(A23, axis=7)
    with raises_at(kn.Error, "[mean]", "axis"):
        kn.mean(A23, axis=(0, 5))


def test_bad_permutation():
    with raises_at(kn.Error, ("[transpose]", "[permute_dims]"), "[2,3]"):
        kn.permute_dims(A23, (0, 0))


def test_dtype_not_allowed():
    with raises_at(kn.Error, ("[neg]", "[negative]"), "bool"):
        -FLAGS
    with raises_at(kn.Error, ("[sub]", "[subtract]"), "bool"):
        FLAGS - FLAGS
    with raises_at(kn.Error, "[take]", ("f32", "float32")):
        kn.take(A23, A23, axis=0)


def test_reshape_size_mismatch():
    with raises_at(kn.Error, "[reshape]", "[2,3]", "[4,2]"):
        kn.reshape(A23, (4, 2))
    with raises_at(kn.Error, "[reshape]", "[2,3]", "[4,2]"):
        A23.reshape(4, 2)
    with raises_at(kn.Error, "[reshape]", "-1"):
        kn.reshape(A23, (-1, -1))


def test_matmul_mismatch():
    with raises_at(kn.Error, "[matmul]", "[2,3]"):
        kn.matmul(A23, A23)
    with raises_at(kn.Error, "[matmul]", "[2,3]"):
        A23 @ A23
    with raises_at(kn.Error, "[matmul]"):
        kn.matmul(kn.asarray(1.0), A23)


def test_item_of_many_elements():
    with raises_at((kn.Error, ValueError, TypeError), "[item]", ("i32[3]", "int32")):
        I3.item()


def test_boolean_mask_names_where():
    with raises_at(kn.Error, "where", "bool"):
        A23[A23 > 0]


def test_index_out_of_range_names_the_line():
    with raises_at((kn.Error, IndexError), "out of bounds", "[2,3]"):
        A23[0, 3]


def test_linalg_and_nn_errors_name_the_user_line_not_the_package():
    with raises_at(kn.Error, "[solve]", "[2,3]"):
        kn.linalg.solve(A23, A23)
    with raises_at(kn.Error, "[conv]"):
        kn.nn.conv(kn.zeros((1, 5, 5, 3)), kn.zeros((3, 3, 4, 2)))
    with raises_at(kn.Error, "[cholesky]", "[2,3]"):
        kn.linalg.cholesky(A23)


def test_random_errors_name_the_user_line():
    with raises_at((kn.Error, ValueError), "[2,-1]"):
        kn.random.normal(kn.random.key(0), (2, -1))


def test_more_operations_name_shapes_dtypes_and_line():
    with raises_at(kn.Error, "[bitwise_and]", ("f32", "float32")):
        kn.bitwise_and(A23, A23)
    with raises_at(kn.Error, ("[concatenate]", "[concat]"), "[2,3]", "[4,2]"):
        kn.concat([A23, kn.zeros((4, 2))], axis=0)
    with raises_at(kn.Error, "[broadcast_to]", "[2,3]", "[3,3]"):
        kn.broadcast_to(A23, (3, 3))
    with raises_at(kn.Error, "[squeeze]", "[2,3]"):
        kn.squeeze(A23, axis=0)
    with raises_at(kn.Error, "[split]", "[2,3]"):
        kn.split(A23, 2, axis=1)
    with raises_at(kn.Error, "[inv]", "[2,3]"):
        kn.linalg.inv(A23)
    with raises_at(kn.Error, "[stack]", "[2,3]", "[4,3]"):
        kn.stack([A23, A43])
    with raises_at(kn.Error, "[where]", "[2,3]", "[4,3]"):
        kn.where(A23 > 0, A23, A43)


def test_at_update_errors_name_the_line():
    with raises_at(kn.Error, ("[at]", "[set]"), "[4]", "[3]"):
        A23.at[0].set(kn.zeros((4,)))


def _helper_that_fails(x):
    return x + kn.zeros((5,))  # the error names this line


def test_error_in_a_helper_names_the_helper_line():
    line = _helper_that_fails.__code__.co_firstlineno + 1
    with raises_at(kn.Error, "[add]", "[2,3]", "[5]", line=line):
        _helper_that_fails(A23)


def test_error_in_a_lambda_names_the_lambda_line():
    fn = lambda x: kn.exp(x) @ x  # noqa: E731
    line = caller_line() - 1
    with raises_at(kn.Error, "[matmul]", line=line):
        fn(A23)


def test_message_does_not_name_kilns_own_files():
    try:
        kn.linalg.solve(A23, A23)
    except kn.Error as error:
        message = str(error)
    else:
        pytest.fail("no error")
    assert "linalg.py" not in message
    assert "_kiln" not in message
    assert ".cpp" not in message


def test_messages_speak_python():
    with raises_at(kn.Error, "where") as r:
        A23[A23 > 0]
    assert "kiln::" not in str(r.value)


# ---- Absurd sizes ---------------------------------------------------------------------------------


def test_absurd_sizes_are_allocation_errors():
    huge = 1 << 62
    with raises_at(kn.AllocationError, "f32[4611686018427387904]", "more than one array may hold"):
        kn.zeros((huge,))
    with raises_at(kn.AllocationError, "[full]", "f32[2305843009213693952,4]"):
        kn.full((huge // 2, 4), 1.0)
    with raises_at(kn.AllocationError, "[broadcast_to]", "f32[4611686018427387904,2,3]"):
        kn.broadcast_to(A23, (huge, 2, 3))
    with raises_at(kn.AllocationError, "more elements than fit"):
        kn.zeros((huge, huge, 0))


def test_negative_sizes():
    with raises_at((ValueError, kn.Error), "negative", "[2,-1]"):
        kn.zeros((2, -1))
    with raises_at((ValueError, kn.Error), "negative"):
        kn.ones(-3)
    with pytest.raises((ValueError, kn.Error)):
        kn.full((-1,), 2.0)
    with pytest.raises((ValueError, kn.Error)):
        kn.eye(-2)
    with pytest.raises((ValueError, kn.Error)):
        kn.linspace(0.0, 1.0, -1)


@pytest.mark.parametrize("size", [float("nan"), float("inf"), 2.5, "3", None, [2, [3]], object()])
def test_sizes_of_the_wrong_kind(size):
    with pytest.raises(BAD_INPUT):
        kn.zeros((2, size))


def test_sizes_beyond_int64():
    with pytest.raises((TypeError, ValueError, OverflowError, kn.Error)):
        kn.zeros((2**70,))
    with pytest.raises((TypeError, ValueError, OverflowError, kn.Error)):
        kn.zeros((2**64 - 1, 2))


def test_arange_bad_bounds():
    with pytest.raises((ValueError, kn.Error)):
        kn.arange(0, 10, 0)
    with pytest.raises((ValueError, OverflowError, kn.Error)):
        kn.arange(float("nan"))
    with pytest.raises((ValueError, OverflowError, kn.AllocationError, kn.Error)):
        kn.arange(float("inf"))


# ---- Bad Python input: never a crash --------------------------------------------------------------


@pytest.mark.parametrize("obj", [
    None,
    object(),
    {"a": 1},
    {1, 2},
    "text",
    b"bytes",
    [[1, 2], [3]],
    [[1, 2], 3],
    [1, "a"],
    [None, 1.0],
    np.array([object()], dtype=object),
    np.array(["a", "b"]),
    np.array([np.datetime64("2020-01-01")]),
    lambda: 1,
])
def test_asarray_refuses_what_it_cannot_convert(obj):
    with pytest.raises(BAD_INPUT):
        kn.asarray(obj)


@pytest.mark.parametrize("value", [2**70, -(2**70), [1, 2**64]])
def test_python_ints_out_of_every_range(value):
    with pytest.raises((OverflowError, ValueError, TypeError)):
        kn.asarray(value)


@pytest.mark.parametrize("fn", [kn.exp, kn.sum, kn.abs, kn.sort, kn.argmax, kn.isnan, kn.flip])
def test_none_as_an_array(fn):
    with pytest.raises(TypeError):
        fn(None)


def test_none_and_strings_as_operands():
    with pytest.raises(TypeError):
        A23 + None
    with pytest.raises(TypeError):
        None * A23
    with pytest.raises(TypeError):
        A23 - "x"
    with pytest.raises(TypeError):
        kn.add(A23, None)
    with pytest.raises(TypeError):
        kn.maximum("a", A23)
    with pytest.raises(TypeError):
        A23 @ None


@pytest.mark.parametrize("axis", ["a", 1.5, [0, "b"], object()])
def test_axes_of_the_wrong_kind(axis):
    with pytest.raises(BAD_INPUT):
        kn.sum(A23, axis=axis)


@pytest.mark.parametrize("axis", [2, -3, 100, (0, 0), -(2**40)])
def test_axes_out_of_range_are_clear_errors(axis):
    with pytest.raises((kn.Error, ValueError, IndexError)) as info:
        kn.sum(A23, axis=axis)
    assert "axis" in str(info.value) or "axes" in str(info.value)


@pytest.mark.parametrize("dtype", ["nope", 5, object(), list])
def test_dtypes_of_the_wrong_kind(dtype):
    with pytest.raises(BAD_INPUT):
        kn.zeros((2,), dtype=dtype)


@pytest.mark.parametrize("index", ["a", 1.5, object(), {0: 1}, (0, "b"), [0.5, 1.0]])
def test_indices_of_the_wrong_kind(index):
    with pytest.raises((TypeError, IndexError, kn.Error)):
        A23[index]


def test_wrong_argument_counts_and_keywords():
    with pytest.raises(TypeError):
        kn.add(A23)
    with pytest.raises(TypeError):
        kn.exp(A23, A23, A23)
    with pytest.raises(TypeError):
        kn.sum(A23, axiss=0)
    with pytest.raises(TypeError):
        kn.zeros()


def test_keyword_values_of_the_wrong_kind():
    with pytest.raises(BAD_INPUT):
        kn.linspace(0.0, 1.0, 2.5)
    with pytest.raises(BAD_INPUT):
        kn.random.normal(None, (2,))
    with pytest.raises(BAD_INPUT + (kn.Error,)):
        kn.random.normal(kn.random.key(0), "shape")
    with pytest.raises(BAD_INPUT + (kn.Error,)):
        kn.random.normal(kn.zeros((3,)), (2,))  # not a key


def test_nan_and_inf_values_are_data_not_errors():
    x = kn.asarray([math.nan, math.inf, -math.inf])
    got = np.asarray(x)
    assert math.isnan(got[0]) and got[1] == math.inf and got[2] == -math.inf


def test_errors_leave_the_operands_usable():
    x = kn.asarray([1.0, 2.0, 3.0])
    for _ in range(3):
        with pytest.raises(kn.Error):
            x + kn.zeros((2,))
    np.testing.assert_array_equal(np.asarray(x + 1), [2.0, 3.0, 4.0])


def test_a_recursive_list_is_refused():
    lst = [1.0]
    lst.append(lst)
    with pytest.raises((TypeError, ValueError, RecursionError)):
        kn.asarray(lst)


def test_objects_whose_array_conversion_raises():
    class Broken:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("broken on purpose")

    with pytest.raises((RuntimeError, TypeError, ValueError)):
        kn.asarray(Broken())
