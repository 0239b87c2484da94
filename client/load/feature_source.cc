#include "client/load/feature_source.h"

#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore::load {
namespace {

constexpr int64_t kSyntheticFrames = 4096;
// Streams that share a starting point are shifted by this many frames per
// lap (a prime, so the shifts do not line up with chunk sizes).
constexpr int64_t kLapShift = 997;

}  // namespace

absl::StatusOr<FeatureSource> FeatureSource::FromKaldiArchive(const std::string& rspecifier,
                                                              int dim) {
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries = ReadKaldiMatrixTable(rspecifier);
  if (!entries.ok()) return entries.status();
  std::vector<int64_t> starts;
  int64_t total = 0;
  for (const KaldiMatrixEntry& entry : *entries) {
    if (entry.matrix.rows() == 0) continue;
    if (entry.matrix.cols() != dim) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: utterance %s has dimension %d, the model %d", rspecifier,
                          entry.key, entry.matrix.cols(), dim));
    }
    starts.push_back(total);
    total += entry.matrix.rows();
  }
  if (total == 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s holds no frames", rspecifier));
  }
  FloatMatrix pool(total, dim);
  int64_t row = 0;
  for (const KaldiMatrixEntry& entry : *entries) {
    if (entry.matrix.rows() == 0) continue;
    std::memcpy(pool.row(row), entry.matrix.data(), sizeof(float) * entry.matrix.rows() * dim);
    row += entry.matrix.rows();
  }
  const std::string description =
      absl::StrFormat("%s: %d utterances, %d frames", rspecifier, starts.size(), total);
  return FeatureSource(std::move(pool), std::move(starts), description);
}

FeatureSource FeatureSource::Synthetic(int dim, uint64_t seed, const DiagGmmModel* model) {
  if (model != nullptr && model->dim() == dim) {
    return FeatureSource(GenerateSyntheticFeatures(*model, kSyntheticFrames, seed), {0},
                         absl::StrFormat("synthetic from the model, %d frames", kSyntheticFrames));
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  FloatMatrix pool(kSyntheticFrames, dim);
  for (int64_t t = 0; t < kSyntheticFrames; ++t) {
    for (int d = 0; d < dim; ++d) {
      const float scale = d == 0 ? 15.0f : 10.0f / (1.0f + d % 13);
      pool.at(t, d) = (d == 0 ? 50.0f : 0.0f) + scale * normal(rng);
    }
  }
  return FeatureSource(std::move(pool), {0},
                       absl::StrFormat("synthetic normal, %d frames", kSyntheticFrames));
}

FeatureSource::FeatureSource(FloatMatrix pool, std::vector<int64_t> stream_starts,
                             std::string description)
    : pool_(std::move(pool)),
      stream_starts_(std::move(stream_starts)),
      description_(std::move(description)) {}

int64_t FeatureSource::PoolRow(int stream, int64_t frame) const {
  const int64_t starts = static_cast<int64_t>(stream_starts_.size());
  const int64_t start = stream_starts_[stream % starts] + (stream / starts) * kLapShift;
  return (start + frame) % pool_.rows();
}

void FeatureSource::Chunk(int stream, int64_t first_frame, int frames,
                          v1::FeatureMatrix* out) const {
  const int64_t dim = pool_.cols();
  out->set_num_frames(frames);
  out->set_dim(static_cast<uint32_t>(dim));
  auto* values = out->mutable_values();
  values->Resize(static_cast<int>(frames * dim), 0.0f);
  float* dst = values->mutable_data();
  for (int t = 0; t < frames; ++t) {
    std::memcpy(dst + t * dim, pool_.row(PoolRow(stream, first_frame + t)), sizeof(float) * dim);
  }
}

FloatMatrix FeatureSource::ChunkMatrix(int stream, int64_t first_frame, int frames) const {
  FloatMatrix out(frames, pool_.cols());
  for (int t = 0; t < frames; ++t) {
    std::memcpy(out.row(t), pool_.row(PoolRow(stream, first_frame + t)),
                sizeof(float) * pool_.cols());
  }
  return out;
}

}  // namespace gmmscore::load
