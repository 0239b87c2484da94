"""What the clients put on the wire, seen by a Python fake of the server
(fake_server.py): audio stream requests byte for byte (the C++ server's
audio streams are not testable here yet), the bearer token on every call,
and a malformed answer turning into an Error."""
import asyncio

import grpc
import numpy as np
import pytest

import gmmscore
from fake_server import FakeScorer
from gmmscore.v1 import scorer_pb2 as pb


@pytest.fixture
def fake():
    with FakeScorer() as server:
        yield server


def audio_chunks(rng, kind):
    sizes = rng.integers(1, 2000, size=rng.integers(2, 6))
    if kind == "pcm16":
        return [rng.integers(-32768, 32768, size=n).astype(np.int16) for n in sizes]
    return [rng.uniform(-1.2, 1.2, size=n).astype(rng.choice([np.float32, np.float64]))
            for n in sizes]


def wire_bytes(samples, kind):
    return samples.astype("<i2" if kind == "pcm16" else "<f4").tobytes()


@pytest.mark.parametrize("kind, audio", [("pcm16", True), ("pcm16", "pcm16"),
                                         ("float32", "float32")])
def test_sync_audio_stream_sends_config_then_sample_bytes(fake, rng, kind, audio):
    chunks = audio_chunks(rng, kind)
    with gmmscore.Client(fake.address) as client:
        with client.stream(["fake"], audio=audio, sample_rate=22050, stream_id="s1") as s:
            for chunk in chunks:
                s.push_audio(chunk)
            assert s.samples_pushed == sum(c.size for c in chunks)
            s.close()
            answers = list(s)
    assert [a.first_frame for a in answers] == list(range(len(chunks)))
    config, *sent = fake.requests
    want_encoding = pb.AudioStreamConfig.PCM16 if kind == "pcm16" else pb.AudioStreamConfig.FLOAT32
    assert config.config.audio == pb.AudioStreamConfig(encoding=want_encoding, sample_rate=22050)
    assert config.config.stream_id == "s1" and list(config.config.models) == ["fake"]
    assert [r.WhichOneof("request") for r in sent] == ["audio"] * len(chunks)
    assert [r.audio.samples for r in sent] == [wire_bytes(c, kind) for c in chunks]


def test_async_audio_stream_sends_the_same_bytes(fake, rng):
    chunks = audio_chunks(rng, "float32")

    async def run():
        async with gmmscore.aio.Client(fake.address) as client:
            async with client.stream(["fake"], audio="float32") as s:
                for chunk in chunks:
                    await s.push_audio(chunk)
                await s.close()
                return [a async for a in s]

    answers = asyncio.run(run())
    assert len(answers) == len(chunks)
    assert [r.audio.samples for r in fake.requests[1:]] == [wire_bytes(c, "f") for c in chunks]


def test_kind_mismatches_are_refused_before_sending(fake):
    with gmmscore.Client(fake.address) as client:
        with client.stream(["fake"], audio=True) as s:
            with pytest.raises(TypeError):
                s.push(np.zeros((1, 2), np.float32))
            with pytest.raises(TypeError):
                s.push_audio(np.zeros(10, np.float32))
            s.push_audio(np.zeros(10, np.int16))
            s.close()
            assert len(list(s)) == 1
        with client.stream(["fake"], audio="float32") as s:
            with pytest.raises(TypeError):
                s.push_audio(np.zeros(10, np.int16))
            s.close()
        with client.stream(["fake"]) as s:
            with pytest.raises(TypeError):
                s.push_audio(np.zeros(10, np.int16))
            s.push(np.zeros((3, 2)))
            s.close()
            assert len(list(s)) == 1
    sent = [r.WhichOneof("request") for r in fake.requests]
    assert sent == ["config", "audio", "config", "config", "chunk"]


def test_async_kind_mismatches_are_refused(fake):
    async def run():
        async with gmmscore.aio.Client(fake.address) as client:
            async with client.stream(["fake"], audio=True) as s:
                with pytest.raises(TypeError):
                    await s.push(np.zeros((1, 2), np.float32))
                with pytest.raises(TypeError):
                    await s.push_audio(np.zeros(4, np.float64))
            async with client.stream(["fake"]) as s:
                with pytest.raises(TypeError):
                    await s.push_audio(np.zeros(4, np.int16))

    asyncio.run(run())
    assert [r.WhichOneof("request") for r in fake.requests] == ["config", "config"]


def test_every_call_carries_the_bearer_token(fake):
    with gmmscore.Client(fake.address, token="tok-1\n") as client:
        client.models()
        with client.stream(["fake"]) as s:
            s.push(np.zeros((1, 2)))

    async def run():
        async with gmmscore.aio.Client(fake.address, token="tok-2") as client:
            await client.models()
            async with client.stream(["fake"]) as s:
                await s.push(np.zeros((1, 2)))

    asyncio.run(run())
    tokens = [m.get("authorization") for m in fake.metadata]
    assert tokens == ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2", "Bearer tok-2"]


def test_no_token_sends_no_authorization(fake):
    with gmmscore.Client(fake.address) as client:
        client.models()
    assert "authorization" not in fake.metadata[0]


def test_a_malformed_answer_ends_the_stream_with_internal():
    with FakeScorer(malformed=True) as fake, gmmscore.Client(fake.address) as client:
        with pytest.raises(gmmscore.Error) as caught:
            with client.stream(["fake"]) as s:
                s.push(np.zeros((1, 2)))
                s.close()
                list(s)
        assert caught.value.code == grpc.StatusCode.INTERNAL
        assert "malformed" in caught.value.message
