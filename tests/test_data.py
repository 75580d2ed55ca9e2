"""ResponseData: construction, validation errors, conversions."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bayesrank import DataError, ResponseData


def test_two_dimensional_input_is_one_trial():
    d = ResponseData(np.array([[1, 0, 1], [0, 0, 1]]))
    assert d.shape == (2, 3, 1) and d.is_binary and d.complete


def test_defaults_and_names():
    d = ResponseData(np.zeros((3, 2, 4), dtype=int), models=["a", "b", "c"])
    assert d.models == ("a", "b", "c")
    assert d.questions == ("q0", "q1")
    np.testing.assert_array_equal(d.weights, [0.0, 1.0])
    c = ResponseData(np.array([[[0, 3]], [[2, 1]]]), n_categories=4)  # stated, never guessed
    assert c.n_categories == 4
    np.testing.assert_allclose(c.weights, [0, 1 / 3, 2 / 3, 1])


def test_immutable():
    d = ResponseData(np.ones((2, 2, 2), dtype=int))
    with pytest.raises(ValueError):
        d.R[0, 0, 0] = 0
    with pytest.raises(AttributeError):
        d.models = ("x", "y")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("R", "kwargs", "message"),
    [
        (np.zeros((2, 3, 4, 5)), {}, "shape"),
        (np.zeros(5), {}, "shape"),
        (np.zeros((0, 3, 4)), {}, "empty axis: 0 models"),
        (np.zeros((2, 0, 4)), {}, "empty axis: 0 questions"),
        (np.zeros((2, 3, 0)), {}, "empty axis: 0 trials"),
        (np.array([[[0, 2]], [[1, 1]]]), {"n_categories": 2}, "outcome 2 outside 0..1"),
        (np.array([[[0, -1]], [[1, 1]]]), {}, r"negative outcome.*mask=\(R >= 0\)"),
        (np.array([[[0.0, 0.5]], [[1.0, 1.0]]]), {}, "integer outcomes"),
        (np.array([[[0.0, np.nan]], [[1.0, 1.0]]]), {}, "NaN"),
        (np.array([["a", "b"], ["c", "d"]]), {}, "numeric"),
        (np.ones((2, 2, 2), int), {"models": ["x", "x"]}, "duplicate model names"),
        (np.ones((2, 2, 2), int), {"models": ["x"]}, "1 model names for 2 models"),
        (np.ones((2, 2, 2), int), {"questions": ["q", "q"]}, "duplicate question names"),
        (np.ones((2, 2, 2), int), {"R0": np.ones((3, 1), int)}, "R0 has M=3"),
        (np.ones((2, 2, 2), int), {"R0": np.ones((3, 2, 1), int)}, "per-model R0"),
        (np.ones((2, 2, 2), int), {"R0": np.full((2, 1), 2)}, "R0 outcomes must lie"),
        (
            np.ones((2, 2, 2), int),
            {"weights": [0.0, 1.0, 2.0], "n_categories": 2},
            r"len\(weights\)=3",
        ),
        (np.ones((2, 2, 2), int), {"mask": np.ones((2, 2, 2), int)}, "boolean"),
        (np.ones((2, 2, 2), int), {"mask": np.ones((2, 2), bool)}, "mask has shape"),
    ],
)
def test_bad_input_names_the_problem(R, kwargs, message):
    with pytest.raises(DataError, match=message):
        ResponseData(R, **kwargs)


def test_nan_allowed_only_in_missing_cells():
    R = np.array([[[1.0, np.nan]], [[0.0, 1.0]]])
    mask = np.array([[[True, False]], [[True, True]]])
    d = ResponseData(R, mask=mask)
    assert not d.complete and d.reductions.trials[0, 0] == 1
    with pytest.raises(DataError, match=r"index \(0, 0, 1\)"):
        ResponseData(R)


def test_model_with_no_observation_is_rejected():
    mask = np.ones((2, 1, 2), bool)
    mask[1] = False
    with pytest.raises(DataError, match="model index 1 has no observed trial"):
        ResponseData(np.zeros((2, 1, 2), int), mask=mask)
    with pytest.raises(DataError, match="model 'beta' has no observed trial"):
        ResponseData(np.zeros((2, 1, 2), int), mask=mask, models=["alpha", "beta"])


def test_default_names_are_as_documented():
    assert ResponseData(np.zeros((3, 2, 1), int)).models == ("model_0", "model_1", "model_2")
    d = ResponseData(np.zeros((12, 11, 1), int))
    assert d.models[0] == "model_00" and d.models[-1] == "model_11"
    assert d.questions[:2] == ("q00", "q01")
    assert "``model_00`` ... ``model_11`` for 12 models" in " ".join(
        ResponseData.__doc__.split())


def test_xarray_and_frame():
    rng = np.random.default_rng(0)
    mask = rng.random((3, 4, 5)) < 0.7
    mask[:, 0, 0] = True
    d = ResponseData(rng.integers(0, 2, (3, 4, 5)), mask=mask, R0=rng.integers(0, 2, (4, 1)))
    ds = d.to_xarray()
    assert ds["R"].dims == ("llm", "question", "trial")
    assert list(ds["llm"].values) == list(d.models)
    assert ResponseData.from_xarray(ds) == d
    frame = d.to_frame()
    assert list(frame.columns) == ["model", "question", "trial", "outcome"]
    assert len(frame) == mask.sum()
    assert isinstance(ds, xr.Dataset)


def test_subset_by_names_positions_and_slices():
    rng = np.random.default_rng(1)
    d = ResponseData(rng.integers(0, 2, (4, 5, 6)), R0=rng.integers(0, 2, (4, 5, 1)))
    s = d.subset(models=["model_2", 0], questions=slice(1, 3), trials=[0, 5])
    assert s.models == ("model_2", "model_0")
    assert s.shape == (2, 2, 2)
    np.testing.assert_array_equal(s.R, d.R[np.ix_([2, 0], [1, 2], [0, 5])])
    np.testing.assert_array_equal(s.R0, d.R0[np.ix_([2, 0], [1, 2])])
    with pytest.raises(DataError, match="unknown model"):
        d.subset(models=["nope"])
    with pytest.raises(DataError, match="out of range"):
        d.subset(trials=[6])


def test_repr_is_readable():
    d = ResponseData(np.ones((2, 3, 4), int), R0=np.ones((3, 1), int))
    text = repr(d)
    assert "L=2 models" in text and "N=4 trials" in text and "R0 shared" in text


def test_caller_arrays_are_not_frozen_or_shared():
    R = np.ones((2, 2, 2), dtype=np.int8)
    mask = np.ones((2, 2, 2), dtype=bool)
    mask[0, 0, 0] = False
    weights = np.array([0.0, 1.0])
    d = ResponseData(R, mask=mask, weights=weights)
    for arr in (R, mask, weights):
        assert arr.flags.writeable
    mask[0, 0, 0] = True
    weights[1] = 5.0
    assert not d.mask[0, 0, 0] and d.weights[1] == 1.0


def test_binarize_thresholds_categories_and_keeps_names_mask_and_prior():
    R = np.array([[[0, 1, 2]], [[2, 2, 1]]])
    mask = np.array([[[True, True, False]], [[True, True, True]]])
    d = ResponseData(R, models=["x", "y"], questions=["q"], mask=mask, n_categories=3,
                     R0=np.array([[[1]], [[2]]]).reshape(2, 1, 1))
    top = d.binarize()
    assert top.is_binary and top.models == ("x", "y") and top.questions == ("q",)
    np.testing.assert_array_equal(top.mask, mask)
    np.testing.assert_array_equal(top.R[1, 0], [1, 1, 0])
    np.testing.assert_array_equal(top.R0.ravel(), [0, 1])
    np.testing.assert_array_equal(d.binarize(at=1).R[1, 0], [1, 1, 1])
    for bad in (0, 3, 1.5, True):
        with pytest.raises(DataError, match="binarize"):
            d.binarize(at=bad)


def test_negative_sentinels_for_missing_trials_load_with_the_mask_the_error_names():
    R = np.array([[[0, 1, -1]], [[1, 1, 0]]])
    d = ResponseData(R, mask=R >= 0)
    assert d.reductions.trials.tolist() == [[2], [3]]
    assert d.reductions.successes.tolist() == [[1], [2]]
