#include "kernels/score/transformed_batch_check.h"

#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/feature_transform_reference.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

struct TransformSpec {
  int dim;
  bool with_offset;
  uint64_t seed;
  std::vector<float> values() const { return GenerateSyntheticTransform(dim, with_offset, seed); }
  int cols() const { return with_offset ? dim + 1 : dim; }
};

}  // namespace

std::shared_ptr<const PreparedModel> PrepareSynthetic(ScoringBackend& backend,
                                                      const SyntheticModelSpec& spec) {
  auto model = GenerateSyntheticModel(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  auto prepared = backend.Prepare(std::make_shared<const DiagGmmModel>(*std::move(model)));
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return prepared.ok() ? *prepared : nullptr;
}

void ExpectTransformedBatchMatchesReference(ScoringBackend& backend, const ScoreOptions& options,
                                            double bound) {
  const std::vector<std::shared_ptr<const PreparedModel>> models = {
      PrepareSynthetic(backend, {.num_states = 70, .min_gaussians = 1, .max_gaussians = 20, .dim = 39, .seed = 21}),
      PrepareSynthetic(backend, {.num_states = 33, .min_gaussians = 4, .max_gaussians = 4, .dim = 13, .seed = 22})};
  ASSERT_NE(models[0], nullptr);
  ASSERT_NE(models[1], nullptr);
  const std::vector<TransformSpec> specs = {{39, true, 1}, {13, false, 2}, {39, true, 3}};
  std::vector<FeatureTransform> transforms;
  for (const TransformSpec& spec : specs) {
    auto transform = FeatureTransform::Create(spec.dim, spec.cols(), spec.values());
    ASSERT_TRUE(transform.ok()) << transform.status();
    transforms.push_back(*std::move(transform));
  }
  struct Window {
    int model;
    int64_t frames;
    int transform;  // -1: none
  };
  // Transform 0 on two windows, one window without, an empty one with one.
  const std::vector<Window> windows = {{0, 10, 0}, {1, 7, 1}, {0, 25, -1}, {0, 0, 2},
                                       {0, 3, 0},  {1, 40, -1}, {0, 9, 2}};
  std::vector<FloatMatrix> features;
  std::vector<ScoreResult> results(windows.size());
  std::vector<ScoreWindow> jobs;
  for (size_t w = 0; w < windows.size(); ++w) {
    const PreparedModel& model = *models[windows[w].model];
    features.push_back(GenerateSyntheticFeatures(model.model(), windows[w].frames, 300 + w));
  }
  for (size_t w = 0; w < windows.size(); ++w) {
    const PreparedModel& model = *models[windows[w].model];
    results[w].loglikes = FloatMatrix(windows[w].frames, model.model().num_states(), NAN);
    jobs.push_back({&model, features[w].view(), &results[w],
                    windows[w].transform < 0 ? nullptr : &transforms[windows[w].transform]});
  }
  const absl::Status status = backend.ScoreBatch(jobs, options);
  ASSERT_TRUE(status.ok()) << status;
  for (size_t w = 0; w < windows.size(); ++w) {
    const Window& window = windows[w];
    const DiagGmmModel& model = models[window.model]->model();
    // What the backend must score: the float64 transform, rounded once.
    FloatMatrix expected_frames = features[w];
    if (window.transform >= 0) {
      const TransformSpec& spec = specs[window.transform];
      const std::vector<double> exact =
          ReferenceTransform(spec.dim, spec.cols(), spec.values(), features[w].view());
      for (size_t i = 0; i < exact.size(); ++i) expected_frames.data()[i] = static_cast<float>(exact[i]);
    }
    ASSERT_EQ(results[w].loglikes.rows(), window.frames) << "window " << w;
    EXPECT_LE(MaxNormalizedError(results[w].loglikes,
                                 ReferenceLogLikelihoods(model, expected_frames.view())),
              bound)
        << backend.name() << " window " << w;
  }
  // Not what the untransformed frames give (the transform was applied).
  const std::vector<double> untransformed = ReferenceLogLikelihoods(models[0]->model(), features[0].view());
  EXPECT_GT(MaxNormalizedError(results[0].loglikes, untransformed), 100 * bound);

  // A transform of another dimension than the model's is refused.
  ScoreResult result;
  const std::vector<ScoreWindow> wrong = {{models[0].get(), features[0].view(), &result, &transforms[1]}};
  const absl::Status refused = backend.ScoreBatch(wrong, options);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
}

}  // namespace gmmscore
