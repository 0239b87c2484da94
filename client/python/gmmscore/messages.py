"""Requests from Python values: the one place where numpy arrays and keyword
options become gmmscore.v1 messages (both clients use it; it talks to no
server, so its encoding is tested on its own).

    request = score_request(frames, ["spk1", "spk2"], fusion="logsumexp", top_k=20)
    config = stream_config(["spk1"], float16=True)
    chunk = chunk_request(frames)
    audio = audio_request(samples, AUDIO_PCM16)

The scoring options, shared by Client.score and Client.stream (proto names
in brackets; 0 or None leaves the server's default):
  fusion          None or "max" (the default), "logsumexp" or "posterior";
                  used when two or more models are named [FusionOptions.method]
  weights         one positive weight per model: logsumexp's mixture weights,
                  posterior's priors; None: uniform [FusionOptions.weights]
  window_frames   posterior: sliding window in frames (0: 50)
  acoustic_scale  posterior: scale on frame log-likelihoods (0: 1.0)
  fused_only      leave out the per-model matrices when a fused one is sent
  frame_totals    also send each frame's log sum_s exp(score) per matrix
  beam            sparse answers: only states within `beam` nats of the
                  frame's best (None or 0: off)
  top_k           sparse answers: at most the top_k best states of a frame
                  (None or 0: off); the others decode to -inf
  float16         values travel as halves relative to each frame's best
  server_timing   streams: each answer carries the server's times
                  (StreamAnswer.server_timing); requests ignore it
  transform       a speaker transform y = A x + b applied to every frame:
                  a D x (D+1) ([A | b]) or D x D (A) array, or an
                  AffineTransform message (GetAdaptation's)
Invalid values the library can see (a negative top_k, an unknown fusion
name, a transform that is not 2-D) raise ValueError or TypeError; the rest
(bad weights, a transform of the wrong size) the server refuses with
INVALID_ARGUMENT.
"""
import numbers

import numpy as np

from gmmscore._stubs import pb

FUSION_METHODS = {
    None: pb.FUSION_METHOD_UNSPECIFIED,
    "max": pb.FUSION_METHOD_MAX,
    "logsumexp": pb.FUSION_METHOD_LOG_SUM_EXP,
    "posterior": pb.FUSION_METHOD_POSTERIOR,
}

# StreamConfig.audio encodings, and the numpy dtype of their samples.
AUDIO_PCM16 = pb.AudioStreamConfig.PCM16
AUDIO_FLOAT32 = pb.AudioStreamConfig.FLOAT32
_AUDIO_WIRE_DTYPE = {AUDIO_PCM16: np.dtype("<i2"), AUDIO_FLOAT32: np.dtype("<f4")}


def model_names(models):
    """`models` (a name or a sequence of names) as a list; ValueError when empty."""
    names = [models] if isinstance(models, str) else list(models)
    if not names:
        raise ValueError("name at least one model")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"model names are strings, not {type(name).__name__}")
    return names


def features_to_proto(frames, allow_empty=True):
    """A FeatureMatrix of `frames`: any 2-D array-like of real numbers,
    frames x dim, converted to float32 (row-major). ValueError for another
    shape, or for no frames when not allow_empty. Values are not checked
    (NaN and Inf are the server's INVALID_ARGUMENT)."""
    array = np.asarray(frames)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"features must be real numbers, not {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"features must be a 2-D array (frames x dim), not {array.ndim}-D "
                         f"of shape {array.shape}")
    if not allow_empty and array.shape[0] == 0:
        raise ValueError("a stream chunk needs at least one frame")
    values = np.ascontiguousarray(array, dtype=np.float32)
    return pb.FeatureMatrix(num_frames=values.shape[0], dim=values.shape[1],
                            values=values.ravel().tolist())


def transform_to_proto(transform):
    """An AffineTransform: `transform` as it is when it is one, else a 2-D
    array-like (rows x cols) in row-major order."""
    if isinstance(transform, pb.AffineTransform):
        return transform
    array = np.asarray(transform, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"transform must be 2-D (D x (D+1) or D x D), not shape {array.shape}")
    return pb.AffineTransform(rows=array.shape[0], cols=array.shape[1],
                              values=np.ascontiguousarray(array).ravel().tolist())


def _fusion_method(fusion):
    if isinstance(fusion, str):
        fusion = fusion.lower()
    if fusion in FUSION_METHODS:
        return FUSION_METHODS[fusion]
    if isinstance(fusion, numbers.Integral) and fusion in pb.FusionMethod.values():
        return int(fusion)
    raise ValueError(f"fusion must be None, 'max', 'logsumexp' or 'posterior', not {fusion!r}")


def _non_negative(name, value, kind):
    value = kind(0 if value is None else value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, not {value}")
    return value


def _options(fusion=None, weights=None, window_frames=0, acoustic_scale=0.0,
             fused_only=False, frame_totals=False, beam=None, top_k=None, float16=False,
             server_timing=False, transform=None):
    """(FusionOptions, OutputOptions, AffineTransform or None) of the options
    in this module's docstring; the single signature behind both requests."""
    fusion_options = pb.FusionOptions(
        method=_fusion_method(fusion),
        weights=[] if weights is None else [float(w) for w in weights],
        window_frames=_non_negative("window_frames", window_frames, int),
        acoustic_scale=_non_negative("acoustic_scale", acoustic_scale, float))
    output = pb.OutputOptions(
        fused_only=bool(fused_only), frame_totals=bool(frame_totals),
        beam=_non_negative("beam", beam, float), top_k=_non_negative("top_k", top_k, int),
        float16=bool(float16), server_timing=bool(server_timing))
    return fusion_options, output, None if transform is None else transform_to_proto(transform)


def score_request(features, models, **options):
    """A ScoreRequest for `features` (frames x dim; may have no frames) scored
    with `models` under `options` (this module's docstring)."""
    fusion, output, transform = _options(**options)
    request = pb.ScoreRequest(models=model_names(models), features=features_to_proto(features),
                              fusion=fusion, output=output)
    if transform is not None:
        request.transform.CopyFrom(transform)
    return request


def audio_encoding(audio):
    """The AudioStreamConfig encoding of Client.stream's `audio` argument, or
    None for a feature stream: False/None -> features; True or "pcm16" ->
    PCM16; "float32" -> FLOAT32. ValueError otherwise."""
    if audio is None or audio is False:
        return None
    if audio is True or (isinstance(audio, str) and audio.lower() == "pcm16"):
        return AUDIO_PCM16
    if isinstance(audio, str) and audio.lower() == "float32":
        return AUDIO_FLOAT32
    raise ValueError(f"audio must be False, True (PCM16), 'pcm16' or 'float32', not {audio!r}")


def _adaptation_to_proto(adaptation):
    if isinstance(adaptation, pb.AdaptationConfig):
        return adaptation
    if isinstance(adaptation, dict):
        # Field names as in AdaptationConfig; enum values by name too
        # (method="FMLLR").
        return pb.AdaptationConfig(**adaptation)
    raise TypeError("adaptation must be an AdaptationConfig or a dict of its fields, not "
                    f"{type(adaptation).__name__}")


def stream_config(models, stream_id="", adaptation=None, audio=False, sample_rate=16000,
                  **options):
    """The StreamConfig that opens a stream (the first StreamScoreRequest's).

    stream_id: named in the server's log lines. adaptation: live speaker
    adaptation, an AdaptationConfig or a dict of its fields (None: off).
    audio: see audio_encoding; sample_rate (Hz) must be the models' front
    end's (the server does not resample). options: this module's docstring.
    """
    fusion, output, transform = _options(**options)
    config = pb.StreamConfig(models=model_names(models), fusion=fusion, output=output,
                             stream_id=stream_id)
    if transform is not None:
        config.transform.CopyFrom(transform)
    if adaptation is not None:
        config.adaptation.CopyFrom(_adaptation_to_proto(adaptation))
    encoding = audio_encoding(audio)
    if encoding is not None:
        if int(sample_rate) <= 0:
            raise ValueError(f"sample_rate must be > 0, not {sample_rate}")
        config.audio.CopyFrom(pb.AudioStreamConfig(encoding=encoding,
                                                   sample_rate=int(sample_rate)))
    return config


def _posteriors_to_proto(posteriors):
    if isinstance(posteriors, pb.ChunkPosteriors):
        return posteriors
    frame, state, weight = posteriors
    return pb.ChunkPosteriors(frame=[int(f) for f in frame], state=[int(s) for s in state],
                              weight=[float(w) for w in weight])


def chunk_request(frames, posteriors=None):
    """The StreamScoreRequest carrying `frames` (frames x dim, at least one
    frame). posteriors (adapting streams only): a decoder's state posteriors
    for these frames, a ChunkPosteriors or (frame, state, weight) sequences."""
    request = pb.StreamScoreRequest(chunk=features_to_proto(frames, allow_empty=False))
    if posteriors is not None:
        request.posteriors.CopyFrom(_posteriors_to_proto(posteriors))
    return request


def audio_bytes(samples, encoding):
    """`samples` as the wire bytes of `encoding` (little-endian whatever the
    host's order).

    PCM16 takes a 1-D numpy int16 array; FLOAT32 a 1-D float32 or float64
    array (float64 is rounded to float32; values beyond [-1, 1] are the
    server's to clip). Both also take bytes-like raw samples already in the
    wire format (a whole number of samples). Another dtype (int16 for a
    float stream, floats or int32 for PCM16): TypeError. Not 1-D (mono), no
    samples, or a partial sample: ValueError.
    """
    wire = _AUDIO_WIRE_DTYPE[encoding]
    if isinstance(samples, (bytes, bytearray, memoryview)):
        raw = bytes(samples)
        if not raw or len(raw) % wire.itemsize:
            raise ValueError(f"raw audio must be a positive whole number of {wire.itemsize}-byte "
                             f"samples, not {len(raw)} bytes")
        return raw
    if not isinstance(samples, np.ndarray):
        raise TypeError(f"audio samples must be a numpy array or bytes, not "
                        f"{type(samples).__name__}")
    if encoding == AUDIO_PCM16:
        if samples.dtype.kind != "i" or samples.dtype.itemsize != 2:
            raise TypeError(f"a PCM16 stream takes int16 samples, not {samples.dtype} (open the "
                            "stream with audio='float32' for float samples)")
    elif samples.dtype.kind != "f" or samples.dtype.itemsize not in (4, 8):
        raise TypeError(f"a float32 audio stream takes float32 or float64 samples, not "
                        f"{samples.dtype} (open the stream with audio=True for int16 PCM)")
    if samples.ndim != 1:
        raise ValueError(f"audio samples must be 1-D (mono), not shape {samples.shape}")
    if samples.size == 0:
        raise ValueError("an audio chunk needs at least one sample")
    return samples.astype(wire, copy=False).tobytes()


def audio_request(samples, encoding):
    """The StreamScoreRequest carrying `samples` (see audio_bytes)."""
    return pb.StreamScoreRequest(audio=pb.AudioChunk(samples=audio_bytes(samples, encoding)))


def align_request(model, words, features=None, audio=None, sample_rate=16000,
                  utterance_id="", phones=False):
    """An AlignRequest: `words` (a sequence, or one string split at
    whitespace) against `features` (frames x dim) or `audio` (mono PCM16: a
    1-D int16 array or raw little-endian bytes, at `sample_rate` Hz). Exactly
    one of features and audio: ValueError otherwise."""
    if (features is None) == (audio is None):
        raise ValueError("give exactly one of features and audio")
    word_list = words.split() if isinstance(words, str) else [str(w) for w in words]
    request = pb.AlignRequest(model=model, utterance_id=utterance_id, words=word_list,
                              phones=bool(phones))
    if features is not None:
        request.features.CopyFrom(features_to_proto(features))
    else:
        request.audio.CopyFrom(pb.PcmAudio(sample_rate=int(sample_rate),
                                           pcm16=audio_bytes(audio, AUDIO_PCM16)))
    return request
