"""gmmscore.aio: the asyncio client (grpc.aio) with the sync API's names.

    client = gmmscore.aio.Client("localhost:50051")
    async with client.stream(models=["spk1"]) as s:
        await s.push(frames); await s.close()
        async for answer in s: ...
"""
from gmmscore.aio.client import Client
from gmmscore.aio.stream import Stream

__all__ = ["Client", "Stream"]
