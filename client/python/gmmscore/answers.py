"""What scoring returns: Scores (a Score call's answer) and StreamAnswer (one
answer of a stream), with numpy matrices decoded from the wire
(decoding.py). Plain frozen dataclasses; the arrays are the caller's."""
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np


@dataclass(frozen=True)
class FusionReport:
    """Which model dominated a fused run of frames (scorer.proto's FusionReport).

    dominant_model / dominant_model_index: the model that dominated the most
    frames (ties: the lower index). model_share: per model, in the order
    named, the fraction of frames it dominated. model_weights: frames x
    models, the weights w_m(t) the fusion used (logsumexp, posterior), or
    None for max.
    """
    dominant_model: str
    dominant_model_index: int
    model_share: np.ndarray
    model_weights: Optional[np.ndarray]


@dataclass(frozen=True)
class Scores:
    """State log-likelihoods (natural log) of a run of frames.

    scores: model name -> frames x states float32 matrix, in the order the
      models were named; empty with fused_only and several models.
    fused: the fused frames x states matrix when several models were named,
      else None.
    fusion: the FusionReport when several models were named, else None.
    frame_totals: model name -> per-frame log sum_s exp(score) (over all
      states, also in sparse answers), when frame_totals was asked for.
    fused_frame_totals: the same of the fused matrix, or None.
    Sparse answers (beam, top_k) hold -inf at the states left out; float16
    answers are decoded to float32.
    """
    scores: Dict[str, np.ndarray]
    fused: Optional[np.ndarray] = None
    fusion: Optional[FusionReport] = None
    frame_totals: Dict[str, np.ndarray] = field(default_factory=dict)
    fused_frame_totals: Optional[np.ndarray] = None

    @property
    def dominant_model(self):
        """The model that dominated these frames (several models), else None."""
        return None if self.fusion is None else self.fusion.dominant_model

    @property
    def loglikes(self):
        """The matrix a decoder uses: the fused one when there is one, else the
        single model's."""
        if self.fused is not None:
            return self.fused
        return next(iter(self.scores.values()))

    @property
    def num_frames(self):
        return self.loglikes.shape[0]


@dataclass(frozen=True)
class StreamAnswer(Scores):
    """The answer to a stream's chunk (or, on an audio stream, to the frames a
    chunk of audio completed): Scores plus

    first_frame: the stream index of the matrices' first row (frames of all
      earlier answers).
    adaptation: for an adapting stream, the AdaptationReport message of the
      update that scored these frames (version 0: none yet); else None.
    server_timing: for a stream opened with server_timing=True, the
      ServerTiming message: when the server's read of the chunk completed
      (chunk_read_unix_us, its wall clock) and how long it held it (held_us)
      before sending the answer; else None.
    """
    first_frame: int = 0
    adaptation: Optional[object] = None
    server_timing: Optional[object] = None
