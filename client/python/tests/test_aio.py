"""gmmscore.aio against the real gmmscored: the same calls awaited, errors,
cancel, and 50 concurrent streams each checked answer by answer against
the offline engine."""
import asyncio

import grpc
import numpy as np
import pytest

import gmmscore
from checks import assert_close, check_order, random_chunks
from fusion_reference import fuse


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, timeout=120))


def test_unary_calls(daemon, models, offline, rng):
    frames = models["spk1"].sample(rng, 25)
    want = offline.score(models["spk1"], {"u": frames})["u"]

    async def calls():
        async with gmmscore.aio.Client(daemon.address) as client:
            await client.wait_ready()
            names = [m.name for m in await client.models()]
            result = await client.score(frames, ["spk1"], top_k=0)
            stats = await client.server_stats()
            with pytest.raises(gmmscore.Error) as not_found:
                await client.get_adaptation("never-published")
            with pytest.raises(gmmscore.Error) as precondition:
                await client.align("spk1", "hello", features=frames)
            with pytest.raises(gmmscore.Error) as invalid:
                await client.score(frames[:, :-1], ["spk1"])
            return names, result, stats, not_found.value, precondition.value, invalid.value

    names, result, stats, not_found, precondition, invalid = run(calls())
    assert {"spk1", "spk2", "spk3", "other"} <= set(names)
    assert_close(result.loglikes, want)
    assert stats.device == "cpu"
    assert not_found.code == grpc.StatusCode.NOT_FOUND
    assert precondition.code == grpc.StatusCode.FAILED_PRECONDITION
    assert invalid.code == grpc.StatusCode.INVALID_ARGUMENT


def test_stream_reads_while_pushing_and_equals_offline(daemon, models, offline, rng):
    names = ["spk1", "spk2"]
    frames = np.vstack([models[n].sample(rng, 40) for n in names])
    chunks = random_chunks(rng, frames, 12)

    async def stream():
        async with gmmscore.aio.Client(daemon.address) as client:
            async with client.stream(names, fusion="logsumexp", weights=[1, 4]) as s:
                async def push():
                    for chunk in chunks:
                        await s.push(chunk)
                        await asyncio.sleep(0.001)
                    await s.close()

                pusher = asyncio.ensure_future(push())
                answers = [answer async for answer in s]
                await pusher
                return answers

    answers = run(stream())
    check_order(answers, chunks)
    per_model = [offline.score(models[n], {"u": frames})["u"] for n in names]
    ref = fuse(per_model, "logsumexp", [1, 4])
    assert_close(np.vstack([a.fused for a in answers]), ref.fused, atol=1e-3)
    for name, want in zip(names, per_model):
        assert_close(np.vstack([a.scores[name] for a in answers]), want)


def test_stream_errors_and_cancel(daemon, models, rng):
    frames = models["spk1"].sample(rng, 10)

    async def streams():
        async with gmmscore.aio.Client(daemon.address) as client:
            codes = []
            try:
                async with client.stream(["spk1"]) as s:
                    await s.push(frames)
                    await s.push(frames[:, :-2])
                    await s.close()
                    async for answer in s:
                        codes.append(answer.first_frame)
            except gmmscore.Error as error:
                codes.append(error.code)
            async with client.stream(["spk1"]) as s:
                for _ in range(4):
                    await s.push(frames)
                first = await s.__anext__()
                s.cancel()
                try:
                    async for _ in s:
                        pass
                except gmmscore.Error as error:
                    codes.append((first.first_frame, error.code))
                try:
                    await s.push(frames)
                except gmmscore.Error as error:
                    codes.append(error.code)
            async with client.stream(["spk1"]) as s:  # the server is still fine
                await s.push(frames)
                await s.close()
                codes.append([a.num_frames async for a in s])
            return codes

    cancelled = grpc.StatusCode.CANCELLED
    assert run(streams()) == [0, grpc.StatusCode.INVALID_ARGUMENT, (0, cancelled), cancelled,
                              [10]]


STREAMS = 50


def test_fifty_concurrent_streams_each_get_their_own_scores(daemon, models, offline, rng):
    names = ["spk1", "spk2", "spk3"]
    setups = []
    for i in range(STREAMS):
        chosen = list(rng.choice(names, size=int(rng.integers(1, 4)), replace=False))
        frames = np.vstack([models[n].sample(rng, int(rng.integers(5, 30))) for n in chosen])
        fusion = ["max", "logsumexp", "posterior"][i % 3]
        setups.append((chosen, fusion, frames, random_chunks(rng, frames, 10)))
    offline_scores = {n: offline.score(models[n], {f"s{i}": s[2] for i, s in enumerate(setups)})
                      for n in names}

    async def one(client, chosen, fusion, chunks):
        async with client.stream(chosen, fusion=fusion, window_frames=9,
                                 acoustic_scale=0.4, stream_id=f"py-{len(chunks)}") as s:
            for chunk in chunks:
                await s.push(chunk)
            await s.close()
            return [answer async for answer in s]

    async def all_streams():
        async with gmmscore.aio.Client(daemon.address) as client:
            return await asyncio.gather(*(one(client, c, f, ch) for c, f, _, ch in setups))

    results = run(all_streams())
    for i, ((chosen, fusion, frames, chunks), answers) in enumerate(zip(setups, results)):
        where = f"stream {i} ({chosen}, {fusion})"
        check_order(answers, chunks)
        per_model = [offline_scores[n][f"s{i}"] for n in chosen]
        for answer in answers:
            rows = slice(answer.first_frame, answer.first_frame + answer.num_frames)
            assert list(answer.scores) == chosen, where
            for name, want in zip(chosen, per_model):
                assert_close(answer.scores[name], want[rows], where)
        if len(chosen) > 1:
            ref = fuse(per_model, fusion, window_frames=9, acoustic_scale=0.4)
            assert_close(np.vstack([a.fused for a in answers]), ref.fused, where, atol=1e-3)
        else:
            assert all(a.fused is None for a in answers), where


def test_a_stream_cancelled_before_it_starts_never_starts(daemon):
    async def cancelled_early():
        async with gmmscore.aio.Client(daemon.address) as client:
            s = client.stream(["spk1"])
            s.cancel()
            with pytest.raises(gmmscore.Error) as caught:
                async for _ in s:
                    pass
            with pytest.raises(gmmscore.Error):
                await s.push(np.zeros((1, 13)))
            return caught.value.code

    assert run(cancelled_early()) == grpc.StatusCode.CANCELLED


def test_a_reader_task_and_a_pusher_task_may_start_the_stream(daemon, models, rng):
    """Without `async with`: a reader task may start the stream (config
    first) before another task pushes."""
    chunks = random_chunks(rng, models["spk1"].sample(rng, 40), 8)

    async def two_tasks():
        async with gmmscore.aio.Client(daemon.address) as client:
            s = client.stream(["spk1"])

            async def push():
                for chunk in chunks:
                    await s.push(chunk)
                await s.close()

            reader = asyncio.ensure_future(s.__anext__())
            await asyncio.sleep(0)  # the reader starts the call first
            await push()
            return [await reader] + [a async for a in s]

    check_order(run(two_tasks()), chunks)
