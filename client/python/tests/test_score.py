"""Client.models, Client.score and Client.server_stats against the real
gmmscored, every answer encoding checked against the offline engine
(`gmmscore score`) on fresh random frames."""
import numpy as np
import pytest

from checks import assert_close, assert_half, assert_sparse, check_fusion_report
from conftest import DIM, STATES
from fusion_reference import fuse


def test_models_lists_what_the_server_serves(client, models):
    served = {m.name: m for m in client.models()}
    for name, model in models.items():
        assert served[name].dim == DIM and served[name].num_states == model.states
        assert served[name].num_gaussians == model.states * 4
        assert served[name].device == "cpu"
    names = [m.name for m in client.models()]
    assert names == sorted(names)


@pytest.mark.parametrize("name", ["spk1", "other"])
def test_dense_float32_equals_the_offline_engine(client, models, offline, rng, name):
    model = models[name]
    frames = model.sample(rng, int(rng.integers(1, 120)))
    result = client.score(frames, name)
    want = offline.score(model, {"u": frames})["u"]
    assert list(result.scores) == [name] and result.fused is None
    assert result.loglikes.dtype == np.float32 and result.loglikes.shape == want.shape
    assert_close(result.loglikes, want)


def test_float64_and_list_frames_are_sent_as_float32(client, models, offline, rng):
    frames = models["spk2"].sample(rng, 9).astype(np.float64)
    want = offline.score(models["spk2"], {"u": frames.astype(np.float32)})["u"]
    assert_close(client.score(frames, ["spk2"]).loglikes, want)
    assert_close(client.score(frames.tolist(), ["spk2"]).loglikes, want)


def test_no_frames_give_empty_matrices(client):
    result = client.score(np.zeros((0, DIM), np.float32), ["spk1", "spk2"])
    assert result.fused.shape == (0, STATES)
    assert result.scores["spk1"].shape == (0, STATES)


def test_float16_answers_stay_within_the_half_bound(client, models, offline, rng):
    frames = models["spk1"].sample(rng, 80)
    want = offline.score(models["spk1"], {"u": frames})["u"]
    got = client.score(frames, ["spk1"], float16=True).loglikes
    assert np.all(np.isfinite(got))
    assert_half(got, want, "float16")
    # Each frame's best travels in float32 (its distance is 0).
    assert_close(got.max(axis=1), want.max(axis=1))


@pytest.mark.parametrize("beam, top_k, float16", [(0, 5, False), (6.0, 0, False),
                                                  (4.0, 3, False), (0, 4, True),
                                                  (8.0, 0, True)])
def test_sparse_answers_keep_the_right_states(client, models, offline, rng, beam, top_k,
                                              float16):
    frames = models["spk3"].sample(rng, 60)
    want = offline.score(models["spk3"], {"u": frames})["u"]
    result = client.score(frames, ["spk3"], beam=beam, top_k=top_k, float16=float16,
                          frame_totals=True)
    got = result.loglikes
    kept = assert_sparse(got, want, beam=beam, top_k=top_k, where="sparse")
    if float16:
        assert_half(got, want, "sparse float16")
    else:
        assert_close(got[kept], want[kept])
    # Totals cover all states, also those left out.
    totals = np.log(np.sum(np.exp(want.astype(np.float64)), axis=1))
    assert_close(result.frame_totals["spk3"], totals, atol=1e-3)


@pytest.mark.parametrize("fusion, weights", [("max", None), ("logsumexp", [1.0, 2.0, 0.5]),
                                             ("posterior", [2.0, 1.0, 1.0])])
def test_fused_answers_follow_the_fusion_formulas(client, models, offline, rng, fusion,
                                                  weights):
    names = ["spk1", "spk2", "spk3"]
    frames = np.vstack([models[n].sample(rng, 20) for n in names])  # each model in turn
    per_model = [offline.score(models[n], {"u": frames})["u"] for n in names]
    ref = fuse(per_model, fusion, weights, window_frames=7, acoustic_scale=0.3)
    result = client.score(frames, names, fusion=fusion, weights=weights, window_frames=7,
                          acoustic_scale=0.3)
    assert list(result.scores) == names
    for name, want in zip(names, per_model):
        assert_close(result.scores[name], want)
    assert_close(result.fused, ref.fused, atol=1e-3)
    check_fusion_report(result.fusion, ref, names)


def test_fused_only_drops_the_per_model_matrices(client, models, rng):
    frames = models["spk1"].sample(rng, 5)
    result = client.score(frames, ["spk1", "spk2"], fused_only=True, frame_totals=True)
    assert result.scores == {} and result.fused.shape == (5, STATES)
    assert result.fused_frame_totals.shape == (5,)
    assert np.array_equal(result.loglikes, result.fused)


def random_transform(rng, dim):
    """A speaker transform near the identity, as fMLLR estimates are."""
    a = np.eye(dim) + rng.normal(0, 0.005, size=(dim, dim))
    return np.hstack([a, rng.normal(0, 0.3, size=(dim, 1))]).astype(np.float32)


def test_a_transform_is_applied_before_scoring(client, models, offline, rng):
    model = models["spk2"]
    frames = model.sample(rng, 30)
    transform = random_transform(rng, DIM)
    want = offline.score(model, {"u": frames}, transform=transform)["u"]
    assert_close(client.score(frames, ["spk2"], transform=transform).loglikes, want)
    offset_free = transform[:, :DIM]
    want = offline.score(model, {"u": frames}, transform=offset_free)["u"]
    assert_close(client.score(frames, ["spk2"], transform=offset_free).loglikes, want)


def test_server_stats_count_the_work(client, models, rng):
    before = client.server_stats()
    client.score(models["spk1"].sample(rng, 11), ["spk1"])
    with client.stream(["spk1"]) as s:
        s.push(models["spk1"].sample(rng, 4))
    after = client.server_stats()
    assert after.device == "cpu"
    assert after.uptime_us > before.uptime_us
    assert after.frames >= before.frames + 15
    assert after.streams_started >= before.streams_started + 1
