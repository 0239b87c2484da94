"""Answers from the wire: StateScores messages to numpy matrices, exactly as
the C++ client's ScoresFromProto (proto/wire_convert.cc) decodes them, and
whole ScoreResponse / StreamScoreResponse messages to Scores / StreamAnswer.

    matrix = scores_from_proto(response.scores[0])   # frames x states float32

Dense float32 values are copied. Half-precision values (OutputOptions.float16)
are binary16 distances from the frame's best: value = float32(half) +
frame_best[t], added in float32 like HalvesToFloats (proto/half_float.cc);
numpy's float16 -> float32 conversion is exact, so the result is the C++
client's to the bit. Sparse answers (beam, top_k) fill the states left out
with -inf. Fields that do not fit together raise gmmscore.Error(INTERNAL)
(the C++ decoder's INVALID_ARGUMENT cases).
"""
import numpy as np

from gmmscore.answers import FusionReport, Scores, StreamAnswer
from gmmscore.errors import malformed_answer


def _values(scores, rows):
    """The values sent, in order, as float32 (halves not yet offset), and
    whether they are halves."""
    half = len(scores.loglikes_f16) > 0 or len(scores.frame_best) > 0
    if not half:
        return np.asarray(scores.loglikes, dtype=np.float32), False
    if len(scores.loglikes) or len(scores.loglikes_f16) % 2 or len(scores.frame_best) != rows:
        raise malformed_answer(
            f"half-precision scores of '{scores.model}': {len(scores.loglikes_f16)} bytes of "
            f"halves, {len(scores.frame_best)} frame_best values and {len(scores.loglikes)} float "
            f"values for {rows} frames")
    return np.frombuffer(scores.loglikes_f16, dtype="<f2").astype(np.float32), True


def scores_from_proto(scores):
    """The loglikes of a StateScores as a num_frames x num_states float32
    matrix (see the module docstring)."""
    rows, cols = scores.num_frames, scores.num_states
    values, half = _values(scores, rows)
    best = np.asarray(scores.frame_best, dtype=np.float32) if half else None
    if len(scores.frame_offsets) == 0 and len(scores.state_ids) == 0:
        if values.size != rows * cols:
            raise malformed_answer(f"scores of '{scores.model}' say {rows} frames x {cols} states "
                                   f"but carry {values.size} values")
        matrix = values.reshape(rows, cols)
        if not half:
            return matrix
        with np.errstate(invalid="ignore"):  # a NaN half stays NaN, quietly, as in C++
            return matrix + best[:, None]
    offsets = np.asarray(scores.frame_offsets, dtype=np.int64)
    state_ids = np.asarray(scores.state_ids, dtype=np.int64)
    kept = state_ids.size
    if (offsets.size != rows + 1 or values.size != kept or offsets[0] != 0
            or offsets[-1] != kept or np.any(np.diff(offsets) < 0)):
        raise malformed_answer(f"sparse scores of '{scores.model}': {rows} frames need {rows + 1} "
                               f"ascending offsets from 0 to the {kept} state ids and values; got "
                               f"{offsets.size} offsets")
    frame_of = np.repeat(np.arange(rows), np.diff(offsets))
    # Within a frame the ids ascend strictly; a new frame may start anywhere.
    ascending = (np.diff(state_ids) > 0) | (np.diff(frame_of) != 0)
    if kept and (state_ids.min() < 0 or state_ids.max() >= cols or not ascending.all()):
        raise malformed_answer(f"sparse scores of '{scores.model}': a state id out of range "
                               f"({cols} states) or out of order within its frame")
    if half:
        with np.errstate(invalid="ignore"):
            values = values + best[frame_of]
    matrix = np.full((rows, cols), -np.inf, dtype=np.float32)
    matrix[frame_of, state_ids] = values
    return matrix


def _totals(scores):
    return np.asarray(scores.frame_totals, dtype=np.float32)


def _fusion_report(report, frames):
    share = np.asarray(report.model_share, dtype=np.float32)
    weights = None
    if len(report.model_weights):
        weights = np.asarray(report.model_weights, dtype=np.float32)
        if share.size == 0 or weights.size != frames * share.size:
            raise malformed_answer(f"fusion report: {weights.size} weights for {frames} frames "
                                   f"of {share.size} models")
        weights = weights.reshape(frames, share.size)
    return FusionReport(dominant_model=report.dominant_model,
                        dominant_model_index=report.dominant_model_index,
                        model_share=share, model_weights=weights)


def _fields(response):
    """The Scores fields of a ScoreResponse or StreamScoreResponse."""
    scores = {s.model: scores_from_proto(s) for s in response.scores}
    totals = {s.model: _totals(s) for s in response.scores if len(s.frame_totals)}
    fused = fusion = fused_totals = None
    if response.HasField("fused"):
        fused = scores_from_proto(response.fused)
        if len(response.fused.frame_totals):
            fused_totals = _totals(response.fused)
    if response.HasField("fusion"):
        fusion = _fusion_report(response.fusion, response.fused.num_frames)
    return dict(scores=scores, fused=fused, fusion=fusion, frame_totals=totals,
                fused_frame_totals=fused_totals)


def scores_from_response(response):
    """Scores of a ScoreResponse."""
    return Scores(**_fields(response))


def stream_answer_from_response(response):
    """StreamAnswer of a StreamScoreResponse."""
    adaptation = response.adaptation if response.HasField("adaptation") else None
    timing = response.timing if response.HasField("timing") else None
    return StreamAnswer(first_frame=response.first_frame, adaptation=adaptation,
                        server_timing=timing, **_fields(response))
