"""Fusion in float64 from the per-model matrices, after the formulas of
scorer.proto's FusionMethod and kernels/score/fusion.h, to check fused
answers against.

    ref = fuse([l1, l2], "posterior", window_frames=20, acoustic_scale=0.5)
    ref.fused (T x S), ref.weights (T x M or None), ref.winners (T),
    ref.clear (T: frames whose winner no rounding can change)
"""
from dataclasses import dataclass

import numpy as np

_CLEAR_MARGIN = 1e-2  # nats; far above the float32 differences compared


@dataclass
class FusionReference:
    fused: np.ndarray
    weights: object
    winners: np.ndarray
    clear: np.ndarray


def _logsumexp(x, axis):
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.sum(np.exp(x - top), axis=axis))


def _posterior_weights(loglikes, priors, window_frames, acoustic_scale):
    """w_m(t): the mean over the last window_frames frames of the model
    posteriors p_m(t) = prior_m exp(scale l_m(t)) / sum_k (...)."""
    totals = _logsumexp(loglikes, axis=2).T                      # T x M
    logits = np.log(priors)[None, :] + acoustic_scale * totals
    posteriors = np.exp(logits - _logsumexp(logits, axis=1)[:, None])
    sums = np.cumsum(np.vstack([np.zeros((1, posteriors.shape[1])), posteriors]), axis=0)
    t = np.arange(1, posteriors.shape[0] + 1)
    start = np.maximum(t - window_frames, 0)
    return (sums[t] - sums[start]) / (t - start)[:, None]


def fuse(matrices, method="max", weights=None, window_frames=50, acoustic_scale=1.0):
    loglikes = np.stack([np.asarray(m, dtype=np.float64) for m in matrices])  # M x T x S
    models, frames, _ = loglikes.shape
    w = np.ones(models) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    if method == "max":
        fused = loglikes.max(axis=0)
        model_weights = None
        terms = loglikes
    else:
        if method == "logsumexp":
            model_weights = np.tile(w, (frames, 1))
        elif method == "posterior":
            model_weights = _posterior_weights(loglikes, w, window_frames or 50,
                                               acoustic_scale or 1.0)
        else:
            raise ValueError(method)
        terms = np.log(model_weights).T[:, :, None] + loglikes
        fused = _logsumexp(terms, axis=0)
    best_state = fused.argmax(axis=1)
    at_best = terms[:, np.arange(frames), best_state]                  # M x T
    winners = at_best.argmax(axis=0)
    ordered_states = np.sort(fused, axis=1)
    ordered_models = np.sort(at_best, axis=0)
    clear = np.ones(frames, dtype=bool)
    if fused.shape[1] > 1:
        clear &= ordered_states[:, -1] - ordered_states[:, -2] > _CLEAR_MARGIN
    if models > 1:
        clear &= ordered_models[-1] - ordered_models[-2] > _CLEAR_MARGIN
    return FusionReference(fused, model_weights, winners, clear)
