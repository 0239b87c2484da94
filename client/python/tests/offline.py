"""The C++ side's answers for the same frames, to compare the client with:
the offline engine (`gmmscore score`) and the C++ client (`gmmscore stream`).

    offline = Offline(binaries, workdir)
    loglikes = offline.score(model, {"u1": frames})["u1"]     # float32, T x S
    fused = offline.stream(address, ["spk1", "spk2"], frames, fusion="posterior")

Both go through binary archives (kaldi_ark.py): bit-exact in and out.
"""
import itertools

from kaldi_ark import read_matrices, write_matrix, write_matrices

_counter = itertools.count()


class Offline:
    def __init__(self, binaries, workdir):
        self.binaries = binaries
        self.workdir = workdir

    def _paths(self):
        n = next(_counter)
        return self.workdir / f"in{n}.ark", self.workdir / f"out{n}.ark"

    def score(self, model, utterances, transform=None):
        """{key: T x S float32} of `model` (a SynthModel, or a model's path)
        over {key: frames}, with `transform` (D x (D+1), Kaldi fMLLR)
        applied first if given."""
        features, output = self._paths()
        write_matrices(features, utterances)
        args = ["score", "--model", getattr(model, "path", model), "--features", f"ark:{features}",
                "--output", f"ark:{output}", "--backend", "cpu"]
        if transform is not None:
            write_matrix(features.with_suffix(".mat"), transform)
            args += ["--fmllr", features.with_suffix(".mat")]
        self.binaries.cli(*args)
        return read_matrices(output)

    def stream(self, address, models, frames, chunk_frames=10, fusion="max", weights=None,
               window_frames=50, acoustic_scale=1.0):
        """What the C++ client (`gmmscore stream`) writes for `frames`
        streamed to `address`: the fused matrix with several models."""
        features, output = self._paths()
        write_matrices(features, {"utt": frames})
        args = ["stream", "--server", address, "--model", ",".join(models),
                "--features", f"ark:{features}", "--output", f"ark:{output}",
                "--chunk_frames", chunk_frames, "--fusion", fusion,
                "--window_frames", window_frames, "--acoustic_scale", acoustic_scale,
                "--nosummary"]
        if weights is not None:
            args += ["--weights", ",".join(str(w) for w in weights)]
        self.binaries.cli(*args)
        return read_matrices(output)["utt"]
