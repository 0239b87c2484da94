"""Answer decoding (gmmscore/decoding.py) on hand-made messages: the rules of
the C++ ScoresFromProto (proto/wire_convert.cc), half precision to the bit
of HalfToFloat (proto/half_float.cc), and its refusals."""
import math
import struct

import grpc
import numpy as np
import pytest

import gmmscore
from gmmscore.decoding import scores_from_proto, scores_from_response
from gmmscore.v1 import scorer_pb2 as pb


def half_to_float_reference(half):
    """proto/half_float.cc's HalfToFloat, bit by bit, as float32 bits."""
    sign = (half & 0x8000) << 16
    exponent = (half >> 10) & 0x1F
    mantissa = half & 0x3FF
    if exponent == 0:
        magnitude = np.float32(math.ldexp(mantissa, -24))
        return -magnitude if sign else magnitude
    if exponent == 31:
        bits = sign | 0x7F800000 | (mantissa << 13)
    else:
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13)
    return np.frombuffer(struct.pack("<I", bits), dtype="<f4")[0]


def test_every_half_decodes_to_the_bits_of_the_cpp_decoder(rng):
    halves = np.arange(1 << 16, dtype=np.uint16)
    best = np.float32(rng.normal(-50, 20))
    message = pb.StateScores(model="m", num_frames=1, num_states=halves.size,
                             loglikes_f16=halves.astype("<u2").tobytes(), frame_best=[best])
    got = scores_from_proto(message)[0]
    with np.errstate(invalid="ignore"):  # signalling NaN halves
        want = np.array([half_to_float_reference(int(h)) for h in halves], dtype=np.float32) + best
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_dense_float32_is_copied(rng):
    values = rng.normal(-40, 10, size=(3, 5)).astype(np.float32)
    message = pb.StateScores(model="m", num_frames=3, num_states=5, loglikes=values.ravel())
    got = scores_from_proto(message)
    assert got.dtype == np.float32 and got.shape == (3, 5)
    assert np.array_equal(got, values)


def test_dense_half_adds_each_frames_best(rng):
    frames, states = 4, 6
    best = rng.normal(-60, 5, size=frames).astype(np.float32)
    diffs = -np.abs(rng.normal(0, 8, size=(frames, states))).astype(np.float16)
    message = pb.StateScores(model="m", num_frames=frames, num_states=states,
                             loglikes_f16=diffs.astype("<f2").tobytes(), frame_best=best)
    want = diffs.astype(np.float32) + best[:, None]
    assert np.array_equal(scores_from_proto(message), want)


def sparse_message(rng, frames, states, half):
    """A random sparse StateScores and the matrix it stands for."""
    want = np.full((frames, states), -np.inf, dtype=np.float32)
    offsets, ids, values, best = [0], [], [], []
    for t in range(frames):
        kept = np.sort(rng.choice(states, size=rng.integers(0, states + 1), replace=False))
        row = rng.normal(-30, 5, size=kept.size).astype(np.float32)
        top = np.float32(row.max()) if kept.size else np.float32(0)
        if half:
            row = (row - top).astype(np.float16)
            want[t, kept] = row.astype(np.float32) + top
        else:
            want[t, kept] = row
        ids += kept.tolist()
        values.append(row)
        offsets.append(len(ids))
        best.append(top)
    message = pb.StateScores(model="m", num_frames=frames, num_states=states,
                             frame_offsets=offsets, state_ids=ids)
    flat = np.concatenate(values) if values else np.zeros(0)
    if half:
        message.loglikes_f16 = flat.astype("<f2").tobytes()
        message.frame_best.extend(best)
    else:
        message.loglikes.extend(flat.tolist())
    return message, want


@pytest.mark.parametrize("half", [False, True])
def test_sparse_fills_left_out_states_with_minus_infinity(rng, half):
    message, want = sparse_message(rng, frames=7, states=9, half=half)
    got = scores_from_proto(message)
    assert np.array_equal(got, want)
    assert np.all(np.isneginf(got[np.isneginf(want)]))


def test_no_frames_decode_to_an_empty_matrix():
    assert scores_from_proto(pb.StateScores(num_frames=0, num_states=5)).shape == (0, 5)
    sparse = pb.StateScores(num_frames=0, num_states=5, frame_offsets=[0])
    assert scores_from_proto(sparse).shape == (0, 5)


@pytest.mark.parametrize("fields", [
    dict(num_frames=2, num_states=3, loglikes=[1.0] * 5),                        # count
    dict(num_frames=1, num_states=2, loglikes_f16=b"\0\0\0", frame_best=[0.0]),  # odd bytes
    dict(num_frames=2, num_states=1, loglikes_f16=b"\0\0\0\0", frame_best=[0.0]),  # bests
    dict(num_frames=1, num_states=1, loglikes=[1.0], loglikes_f16=b"\0\0", frame_best=[0.0]),
    dict(num_frames=1, num_states=3, frame_offsets=[0, 2], state_ids=[0, 1], loglikes=[1.0]),
    dict(num_frames=2, num_states=3, frame_offsets=[0, 1], state_ids=[0], loglikes=[1.0]),
    dict(num_frames=1, num_states=3, frame_offsets=[1, 1], state_ids=[0], loglikes=[1.0]),
    dict(num_frames=2, num_states=3, frame_offsets=[0, 2, 1], state_ids=[0], loglikes=[1.0]),
    dict(num_frames=1, num_states=3, frame_offsets=[0, 1], state_ids=[3], loglikes=[1.0]),
    dict(num_frames=1, num_states=3, frame_offsets=[0, 2], state_ids=[2, 1],
         loglikes=[1.0, 2.0]),
    dict(num_frames=1, num_states=3, frame_offsets=[0, 2], state_ids=[1, 1],
         loglikes=[1.0, 2.0]),
])
def test_malformed_answers_are_internal_errors(fields):
    with pytest.raises(gmmscore.Error) as caught:
        scores_from_proto(pb.StateScores(model="m", **fields))
    assert caught.value.code == grpc.StatusCode.INTERNAL


def test_a_new_frame_may_restart_the_state_ids():
    message = pb.StateScores(num_frames=2, num_states=3, frame_offsets=[0, 1, 2],
                             state_ids=[2, 0], loglikes=[1.0, 2.0])
    got = scores_from_proto(message)
    assert got[0, 2] == 1.0 and got[1, 0] == 2.0


def test_a_fused_response_decodes_every_part(rng):
    values = rng.normal(size=(2, 3)).astype(np.float32)
    response = pb.ScoreResponse(
        scores=[pb.StateScores(model="a", num_frames=2, num_states=3, loglikes=values.ravel(),
                               frame_totals=[1.5, 2.5]),
                pb.StateScores(model="b", num_frames=2, num_states=3, loglikes=values.ravel())],
        fused=pb.StateScores(model="fused", num_frames=2, num_states=3,
                             loglikes=(values + 1).ravel(), frame_totals=[3.0, 4.0]),
        fusion=pb.FusionReport(dominant_model_index=1, dominant_model="b",
                               model_share=[0.5, 0.5], model_weights=[0.25, 0.75, 0.5, 0.5]))
    result = scores_from_response(response)
    assert list(result.scores) == ["a", "b"]
    assert np.array_equal(result.fused, values + 1)
    assert result.loglikes is result.fused
    assert result.dominant_model == "b" and result.fusion.dominant_model_index == 1
    assert np.array_equal(result.fusion.model_weights, [[0.25, 0.75], [0.5, 0.5]])
    assert np.array_equal(result.frame_totals["a"], [1.5, 2.5])
    assert "b" not in result.frame_totals
    assert np.array_equal(result.fused_frame_totals, [3.0, 4.0])


def test_a_single_model_response_has_no_fusion(rng):
    values = rng.normal(size=(2, 3)).astype(np.float32)
    result = scores_from_response(pb.ScoreResponse(scores=[pb.StateScores(
        model="a", num_frames=2, num_states=3, loglikes=values.ravel())]))
    assert result.fused is None and result.fusion is None and result.dominant_model is None
    assert np.array_equal(result.loglikes, values)
