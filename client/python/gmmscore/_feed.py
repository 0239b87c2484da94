"""RequestFeed: the requests of one sync stream, from push() to gRPC.

gRPC's sync API sends a stream's requests by iterating an iterator on a
thread of its own, taking the next request once the previous one is handed
to the transport. The feed is that iterator: a bounded FIFO that push()
fills and gRPC drains, so push() waits only while `capacity` requests are
queued ahead of it, which happens only when gRPC cannot send (the server or
the network is not taking them), never because answers are unread (the
stream's reader thread takes those as they come).

    feed = RequestFeed(config_request, capacity=16)
    call = stub.StreamScore(iter(feed))       # gRPC's thread iterates
    feed.put(chunk_request)                   # False once the call is over
    feed.close()                              # half-close after the rest
    feed.abort()                              # the call ended: wake everyone

Thread safety: put/close/abort from any thread; one iterator (gRPC's).
"""
import collections
import threading


class RequestFeed:
    def __init__(self, first, capacity):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, not {capacity}")
        self._capacity = capacity
        self._cond = threading.Condition()
        self._queue = collections.deque([first])  # the config does not count
        self._closed = False
        self._aborted = False

    def put(self, request, timeout=None):
        """Queues `request` behind the others, waiting while the feed is full.
        True once queued; False if the feed was aborted (the call is over:
        the request will never be sent) or `timeout` seconds passed."""
        with self._cond:
            if not self._cond.wait_for(
                    lambda: self._aborted or len(self._queue) < self._capacity, timeout):
                return False
            if self._aborted:
                return False
            self._queue.append(request)
            self._cond.notify_all()
            return True

    def close(self):
        """No more requests: the iteration ends after the queued ones."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def abort(self):
        """The call is over: drops what is queued, ends the iteration, and
        makes every waiting and later put return False."""
        with self._cond:
            self._aborted = True
            self._queue.clear()
            self._cond.notify_all()

    def __iter__(self):
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed or self._aborted)
                if self._aborted or not self._queue:
                    return
                request = self._queue.popleft()
                self._cond.notify_all()
            yield request
