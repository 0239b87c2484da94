// Random HMMs and emissions for the HMM tests.
#ifndef GMMSCORE_KERNELS_HMM_HMM_TEST_UTIL_H_
#define GMMSCORE_KERNELS_HMM_HMM_TEST_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/core/matrix.h"
#include "kernels/hmm/dense_hmm.h"

namespace gmmscore {

// A seed from the environment (GMMSCORE_TEST_SEED, to replay a failure) or
// fresh.
inline uint64_t FreshTestSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

// A random N-state HMM over E emission states; about a third of the
// transitions and state 0's initial probability are zero (never a whole row).
inline DenseHmm RandomDenseHmm(int n, int emission_states, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.05, 1.0);
  std::vector<int32_t> emissions(n);
  for (int32_t& e : emissions) e = static_cast<int32_t>(rng() % emission_states);
  std::vector<double> initial(n), transitions(int64_t{n} * n);
  for (int i = 0; i < n; ++i) initial[i] = (n > 1 && i == 0) ? 0.0 : unit(rng);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) transitions[int64_t{i} * n + j] = (j != i && rng() % 3 == 0) ? 0.0 : unit(rng);
  }
  auto normalise = [](double* p, int count) {
    double sum = 0;
    for (int i = 0; i < count; ++i) sum += p[i];
    for (int i = 0; i < count; ++i) p[i] /= sum;
  };
  normalise(initial.data(), n);
  for (int i = 0; i < n; ++i) normalise(&transitions[int64_t{i} * n], n);
  return *MakeDenseHmm(emissions, initial, transitions);
}

// Log-likelihoods in [-30, -1], frames x states.
inline FloatMatrix RandomLoglikes(int64_t frames, int states, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> value(-30.0f, -1.0f);
  FloatMatrix out(frames, states);
  for (int64_t t = 0; t < frames; ++t) {
    for (int s = 0; s < states; ++s) out.row(t)[s] = value(rng);
  }
  return out;
}

// Emissions of a batch of utterances of mixed lengths (1, 2, 17, 320
// frames, two of some), and views of them for the batched recursions.
struct MixedLengthBatch {
  std::vector<FloatMatrix> data;
  std::vector<ConstMatrixView> views;
};

inline MixedLengthBatch RandomMixedLengthBatch(int states, std::mt19937_64& rng) {
  MixedLengthBatch batch;
  for (int64_t frames : {2, 320, 1, 17, 320, 2}) batch.data.push_back(RandomLoglikes(frames, states, rng));
  for (const FloatMatrix& m : batch.data) batch.views.push_back(m.view());
  return batch;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_HMM_TEST_UTIL_H_
