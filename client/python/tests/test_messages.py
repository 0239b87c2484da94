"""Request encoding (gmmscore/messages.py, gmmscore/channel.py) without a
server: features, options, transforms, audio bytes, align requests, the
bearer-token metadata and TLS arguments."""
import struct

import grpc
import numpy as np
import pytest

from gmmscore import channel, messages
from gmmscore.v1 import scorer_pb2 as pb


def test_features_travel_as_row_major_float32(rng):
    frames = rng.normal(size=(5, 3))  # float64: rounded to float32 on the wire
    matrix = messages.features_to_proto(frames)
    assert (matrix.num_frames, matrix.dim) == (5, 3)
    assert np.array_equal(np.array(matrix.values, dtype=np.float32),
                          frames.astype(np.float32).ravel())
    fortran = np.asfortranarray(frames.astype(np.float32))
    assert list(messages.features_to_proto(fortran).values) == list(matrix.values)


@pytest.mark.parametrize("bad, error", [
    (np.zeros(4), ValueError), (np.zeros((2, 2, 2)), ValueError),
    (np.array([["a", "b"]]), TypeError), (np.zeros((1, 2), dtype=complex), TypeError)])
def test_features_of_another_shape_or_kind_are_refused(bad, error):
    with pytest.raises(error):
        messages.features_to_proto(bad)


def test_chunk_posteriors_from_sequences_or_a_message():
    request = messages.chunk_request(np.zeros((2, 3)), posteriors=([0, 1], [5, 7], [0.25, 1]))
    assert request.posteriors == pb.ChunkPosteriors(frame=[0, 1], state=[5, 7],
                                                    weight=[0.25, 1.0])
    message = pb.ChunkPosteriors(frame=[1], state=[2], weight=[0.5])
    assert messages.chunk_request(np.zeros((2, 3)), posteriors=message).posteriors == message
    assert not messages.chunk_request(np.zeros((1, 3))).HasField("posteriors")


def test_a_chunk_needs_a_frame_but_a_score_request_not():
    with pytest.raises(ValueError):
        messages.chunk_request(np.zeros((0, 4)))
    assert messages.score_request(np.zeros((0, 4)), "m").features.num_frames == 0


def test_options_fill_fusion_output_and_transform(rng):
    transform = rng.normal(size=(3, 4)).astype(np.float32)
    request = messages.score_request(np.zeros((1, 3)), ["a", "b"], fusion="posterior",
                                     weights=[1, 3], window_frames=20, acoustic_scale=0.5,
                                     fused_only=True, frame_totals=True, beam=8.5, top_k=7,
                                     float16=True, server_timing=True, transform=transform)
    assert list(request.models) == ["a", "b"]
    assert request.fusion == pb.FusionOptions(method=pb.FUSION_METHOD_POSTERIOR,
                                              weights=[1.0, 3.0], window_frames=20,
                                              acoustic_scale=0.5)
    assert request.output == pb.OutputOptions(fused_only=True, frame_totals=True, beam=8.5,
                                              top_k=7, float16=True, server_timing=True)
    assert (request.transform.rows, request.transform.cols) == (3, 4)
    assert np.array_equal(np.array(request.transform.values, dtype=np.float32),
                          transform.ravel())


def test_defaults_leave_the_servers_defaults():
    config = messages.stream_config("m", top_k=None, beam=None)
    assert list(config.models) == ["m"]
    assert config.fusion == pb.FusionOptions() and config.output == pb.OutputOptions()
    assert not config.HasField("transform") and not config.HasField("audio")
    assert not config.HasField("adaptation")


@pytest.mark.parametrize("name, method", [("max", pb.FUSION_METHOD_MAX),
                                          ("LogSumExp", pb.FUSION_METHOD_LOG_SUM_EXP),
                                          (None, pb.FUSION_METHOD_UNSPECIFIED),
                                          (pb.FUSION_METHOD_POSTERIOR, pb.FUSION_METHOD_POSTERIOR)])
def test_fusion_names(name, method):
    assert messages.stream_config(["a", "b"], fusion=name).fusion.method == method


@pytest.mark.parametrize("options", [dict(fusion="mean"), dict(top_k=-1), dict(beam=-0.5),
                                     dict(window_frames=-2), dict(transform=np.zeros(3))])
def test_bad_options_are_refused_before_sending(options):
    with pytest.raises(ValueError):
        messages.stream_config("m", **options)


def test_models_must_be_named():
    with pytest.raises(ValueError):
        messages.stream_config([])
    with pytest.raises(TypeError):
        messages.stream_config([1])


def test_a_transform_message_passes_as_it_is():
    transform = pb.AffineTransform(rows=1, cols=2, values=[1.0, 0.5])
    assert messages.stream_config("m", transform=transform).transform == transform


def test_adaptation_from_a_dict_or_a_message():
    config = messages.stream_config("m", adaptation=dict(method="FMLLR", save_as="spk",
                                                         start_after_frames=40),
                                    stream_id="call-7")
    assert config.adaptation.method == pb.AdaptationConfig.FMLLR
    assert config.adaptation.save_as == "spk" and config.adaptation.start_after_frames == 40
    assert config.stream_id == "call-7"
    message = pb.AdaptationConfig(method=pb.AdaptationConfig.MAP_MEANS)
    assert messages.stream_config("m", adaptation=message).adaptation == message


@pytest.mark.parametrize("audio, encoding", [(True, pb.AudioStreamConfig.PCM16),
                                             ("pcm16", pb.AudioStreamConfig.PCM16),
                                             ("float32", pb.AudioStreamConfig.FLOAT32)])
def test_audio_streams_say_their_encoding_and_rate(audio, encoding):
    config = messages.stream_config("m", audio=audio, sample_rate=8000)
    assert config.audio == pb.AudioStreamConfig(encoding=encoding, sample_rate=8000)
    assert messages.stream_config("m", audio=audio).audio.sample_rate == 16000


@pytest.mark.parametrize("audio", ["mp3", 16, "int16"])
def test_unknown_audio_encodings_are_refused(audio):
    with pytest.raises(ValueError):
        messages.stream_config("m", audio=audio)


def test_pcm16_samples_travel_as_little_endian_int16(rng):
    samples = rng.integers(-32768, 32768, size=1001).astype(np.int16)
    request = messages.audio_request(samples, messages.AUDIO_PCM16)
    assert request.WhichOneof("request") == "audio"
    assert request.audio.samples == struct.pack(f"<{samples.size}h", *samples.tolist())
    big_endian = samples.astype(">i2")
    assert messages.audio_request(big_endian, messages.AUDIO_PCM16) == request


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ">f4"])
def test_float_samples_travel_as_little_endian_float32(rng, dtype):
    samples = rng.uniform(-1, 1, size=777).astype(dtype)
    got = messages.audio_request(samples, messages.AUDIO_FLOAT32).audio.samples
    rounded = samples.astype(np.float32).tolist()
    assert got == struct.pack(f"<{samples.size}f", *rounded)


def test_raw_bytes_pass_as_they_are(rng):
    raw = rng.bytes(64)
    assert messages.audio_bytes(raw, messages.AUDIO_PCM16) == raw
    assert messages.audio_bytes(bytearray(raw), messages.AUDIO_FLOAT32) == raw
    with pytest.raises(ValueError):
        messages.audio_bytes(raw[:63], messages.AUDIO_PCM16)
    with pytest.raises(ValueError):
        messages.audio_bytes(raw[:62], messages.AUDIO_FLOAT32)


@pytest.mark.parametrize("samples, encoding, error", [
    (np.zeros(4, np.float32), messages.AUDIO_PCM16, TypeError),
    (np.zeros(4, np.int32), messages.AUDIO_PCM16, TypeError),
    (np.zeros(4, np.uint16), messages.AUDIO_PCM16, TypeError),
    (np.zeros(4, np.int16), messages.AUDIO_FLOAT32, TypeError),
    (np.zeros(4, np.float16), messages.AUDIO_FLOAT32, TypeError),
    ([0, 1, 2], messages.AUDIO_PCM16, TypeError),
    (np.zeros((4, 2), np.int16), messages.AUDIO_PCM16, ValueError),
    (np.zeros(0, np.int16), messages.AUDIO_PCM16, ValueError),
    (np.zeros(0, np.float32), messages.AUDIO_FLOAT32, ValueError),
    (b"", messages.AUDIO_PCM16, ValueError)])
def test_mismatched_audio_is_refused(samples, encoding, error):
    with pytest.raises(error):
        messages.audio_request(samples, encoding)


def test_align_requests(rng):
    pcm = rng.integers(-3000, 3000, size=320).astype(np.int16)
    request = messages.align_request("en-us", "he was not", audio=pcm, sample_rate=8000,
                                     utterance_id="u1", phones=True)
    assert list(request.words) == ["he", "was", "not"] and request.phones
    assert request.audio.sample_rate == 8000 and request.audio.pcm16 == pcm.astype("<i2").tobytes()
    features = rng.normal(size=(4, 39))
    request = messages.align_request("en-us", ["a", "b"], features=features)
    assert request.WhichOneof("input") == "features" and request.features.num_frames == 4
    with pytest.raises(ValueError):
        messages.align_request("en-us", ["a"])
    with pytest.raises(ValueError):
        messages.align_request("en-us", ["a"], features=features, audio=pcm)
    with pytest.raises(TypeError):
        messages.align_request("en-us", ["a"], audio=features.astype(np.float32))


def test_token_metadata_is_the_cpp_clients():
    assert channel.auth_metadata(None) == ()
    assert channel.auth_metadata("s3cret\n") == (("authorization", "Bearer s3cret"),)
    assert channel.auth_metadata(b"abc") == (("authorization", "Bearer abc"),)
    with pytest.raises(ValueError):
        channel.auth_metadata("  ")


def test_tls_arguments(tmp_path):
    assert channel.credentials(None) is None and channel.credentials(False) is None
    assert isinstance(channel.credentials(True), grpc.ChannelCredentials)
    assert isinstance(channel.credentials(b"-----BEGIN CERTIFICATE-----"), grpc.ChannelCredentials)
    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    assert isinstance(channel.credentials(ca), grpc.ChannelCredentials)
    assert isinstance(channel.credentials(str(ca)), grpc.ChannelCredentials)
    own = grpc.ssl_channel_credentials()
    assert channel.credentials(own) is own
    with pytest.raises(OSError):
        channel.credentials(tmp_path / "missing.pem")
    with pytest.raises(TypeError):
        channel.credentials(3)
