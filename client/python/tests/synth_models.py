"""Small synthetic models (`gmmscore synth`) and features drawn from them.

    model = SynthModel.make(binaries, directory, "spk1", states=24, gaussians=4, dim=13, seed=7)
    frames = model.sample(rng, 50)        # float32, 50 x 13, in the model's range

Features are drawn from the model's own Gaussians (read back through
`gmmscore convert --format kaldi-text`), so log-likelihoods are in the
range real speech gives rather than hugely negative.
"""
import re

import numpy as np


def _blocks(text, tag):
    """The bracketed value lists following each `tag` in a Kaldi text model."""
    pattern = re.escape(tag) + r"\s*\[([^\]]*)\]"
    return [np.array(block.split(), dtype=np.float64) for block in re.findall(pattern, text)]


class SynthModel:
    def __init__(self, name, path, states, dim, weights, means, variances):
        self.name = name
        self.path = path
        self.states = states
        self.dim = dim
        self._weights = weights      # per state: G weights
        self._means = means          # per state: G x D
        self._variances = variances  # per state: G x D

    @staticmethod
    def make(binaries, directory, name, states, gaussians, dim, seed):
        path = directory / f"{name}.gmm"
        binaries.cli("synth", "--states", states, "--gaussians", gaussians, "--dim", dim,
                     "--seed", seed, "--output", path)
        text_path = directory.parent / f"{name}.kaldi.txt"
        binaries.cli("convert", "--model", path, "--output", text_path, "--format", "kaldi-text")
        text = text_path.read_text()
        weights = _blocks(text, "<WEIGHTS>")
        inv_vars = [v.reshape(-1, dim) for v in _blocks(text, "<INV_VARS>")]
        means = [m.reshape(-1, dim) / iv
                 for m, iv in zip(_blocks(text, "<MEANS_INVVARS>"), inv_vars)]
        assert len(weights) == len(means) == states, f"{text_path}: {len(weights)} states"
        return SynthModel(name, path, states, dim, weights, means, [1.0 / iv for iv in inv_vars])

    def sample(self, rng, frames):
        """`frames` x dim float32 features, each from a random state's
        Gaussian (picked by weight)."""
        out = np.empty((frames, self.dim), dtype=np.float32)
        for t in range(frames):
            s = rng.integers(self.states)
            g = rng.choice(len(self._weights[s]), p=self._weights[s] / self._weights[s].sum())
            spread = np.sqrt(self._variances[s][g])
            out[t] = self._means[s][g] + spread * rng.standard_normal(self.dim)
        return out
