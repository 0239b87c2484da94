"""Comparisons of decoded answers with reference scores, with the
tolerances the C++ tests use (tests/test_daemon.cc: 1e-4 nats absolute;
fusion_transform_test.cc for sparse and half-precision answers), and the
stream helpers the tests share (random chunking, answer order)."""
import numpy as np

ATOL = 1e-4
RTOL = 1e-6  # float32 results of a few hundred nats: a few ulps


def assert_close(got, want, where="", atol=ATOL):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=atol, err_msg=where)


def assert_half(got, want, where=""):
    """A float16 answer: each value within 2^-11 of its distance below the
    frame's best (plus the float32 tolerance) of the reference; the states
    the answer left out (-inf) are not checked here."""
    best = np.max(want, axis=1, keepdims=True)
    allowed = ATOL + RTOL * np.abs(want) + np.ldexp(best - want, -11)
    sent = np.isfinite(got)
    excess = np.where(sent, np.abs(got - want) - allowed, -np.inf)
    assert np.all(excess <= 0), f"{where}: half value off by {excess.max()} beyond its bound"


def assert_sparse(got, want, beam=0.0, top_k=0, tolerance=ATOL, where=""):
    """The selection of a sparse answer (after the -inf fill) against the
    dense reference, as fusion_transform_test's ExpectSparseFrame: dropped
    states exactly -inf, kept ones within `beam` of the best, none dropped
    beating one kept, and as many kept as the selection allows (near-ties at
    the cut either way). The kept values are the caller's to compare.
    Returns the kept mask."""
    for t in range(want.shape[0]):
        row, ref = got[t], want[t].astype(np.float64)
        kept = np.isfinite(row)
        assert np.all(row[~kept] == -np.inf), f"{where} frame {t}: a dropped state is not -inf"
        best = ref.max()
        if beam > 0:
            assert np.all(ref[kept] >= best - beam - tolerance), f"{where} frame {t}: beyond beam"
        if kept.any() and (~kept).any():
            assert ref[~kept].max() <= ref[kept].min() + 2 * tolerance, \
                f"{where} frame {t}: a dropped state beats a kept one"
        limit = top_k if top_k > 0 else ref.size
        surely = ref.size if beam <= 0 else int(np.sum(ref >= best - beam + 2 * tolerance))
        maybe = ref.size if beam <= 0 else int(np.sum(ref >= best - beam - 2 * tolerance))
        assert max(1, min(limit, surely)) <= kept.sum() <= min(limit, maybe), \
            f"{where} frame {t}: kept {kept.sum()} states (top_k {top_k}, beam {beam})"
    return np.isfinite(got)


def check_fusion_report(report, ref, names, rows=slice(None)):
    """A FusionReport against the reference's winners over `rows`: each
    model's share within the frames too close to call, the dominant model
    one with the largest share, weights as computed."""
    winners, clear = ref.winners[rows], ref.clear[rows]
    frames = winners.size
    unclear = frames - clear.sum()
    for m in range(len(names)):
        want_share = np.sum(winners[clear] == m) / frames
        assert want_share - 1e-6 <= report.model_share[m] <= want_share + unclear / frames + 1e-6
    assert report.dominant_model == names[report.dominant_model_index]
    assert report.model_share[report.dominant_model_index] == report.model_share.max()
    if ref.weights is None:
        assert report.model_weights is None
    else:
        assert_close(report.model_weights, ref.weights[rows], atol=1e-5)


def random_chunks(rng, frames, largest=25):
    """`frames` cut into chunks of 1..largest rows."""
    chunks, at = [], 0
    while at < len(frames):
        size = int(rng.integers(1, largest + 1))
        chunks.append(frames[at:at + size])
        at += size
    return chunks


def check_order(answers, chunks):
    """One answer per chunk, in order, first_frame counting the frames."""
    assert [a.num_frames for a in answers] == [len(c) for c in chunks]
    assert [a.first_frame for a in answers] == list(np.cumsum([0] + [len(c) for c in chunks])[:-1])
