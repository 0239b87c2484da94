// Dense forward-backward on the GPU at the anchor shape: B
// utterances of T frames through an N-state HMM (default 1000 x 320 x 1024),
// random emissions, posteriors kept on the device (want_gamma = false).
// Prints seconds and the DGEMM rate: the forward is 2 B N^2 T flops, the
// backward twice that (beta and the transition counts).
//
//   hmm_bench [--utterances 1000] [--frames 320] [--states 1024]
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "kernels/hmm/cuda/forward_backward_cuda.h"
#include "kernels/hmm/hmm_test_util.h"

ABSL_FLAG(int, utterances, 1000, "utterances in the batch");
ABSL_FLAG(int, frames, 320, "frames per utterance");
ABSL_FLAG(int, states, 1024, "HMM states (each emits with its own GMM state)");
ABSL_FLAG(int, repeats, 3, "timed runs after one warm-up");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace gmmscore;
  const int b = absl::GetFlag(FLAGS_utterances), t = absl::GetFlag(FLAGS_frames), n = absl::GetFlag(FLAGS_states);
  std::mt19937_64 rng(1);
  DenseHmm hmm = RandomDenseHmm(n, n, rng);
  for (int j = 0; j < n; ++j) hmm.emissions[j] = j;
  std::vector<FloatMatrix> data;
  for (int u = 0; u < b; ++u) data.push_back(RandomLoglikes(t, n, rng));
  std::vector<ConstMatrixView> views;
  for (const FloatMatrix& m : data) views.push_back(m.view());
  double best = 1e30, best_device = 1e30;
  for (int run = 0; run <= absl::GetFlag(FLAGS_repeats); ++run) {
    const auto start = std::chrono::steady_clock::now();
    auto out = ForwardBackwardCuda(hmm, views, 0, /*want_gamma=*/false);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.status().ToString().c_str());
      return 1;
    }
    if (run > 0) best = std::min(best, seconds), best_device = std::min(best_device, out->device_seconds);
  }
  const double flops = 6.0 * b * double(n) * n * t;
  std::printf("hmm_forward_backward,B=%d,T=%d,N=%d,device_seconds=%.4f,tflops=%.2f,call_seconds=%.4f "
              "(the call packs and uploads %.2f GB of emissions)\n",
              b, t, n, best_device, flops / best_device / 1e12, best, double(b) * t * n * 4 / 1e9);
  return 0;
}
