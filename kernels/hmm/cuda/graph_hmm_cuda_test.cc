// The batched graph recursions on CUDA against the float64 reference
// (sparse_hmm_reference.h): random graphs of 1 to 3000 states and 1 to 400
// frames mixed in one call, host and device-score entries, chunked batches,
// and the errors. GPU tests skip without a device; the input checks run
// anywhere. Each comparison prints its worst error as a `graph_error` line.
#include "kernels/hmm/cuda/graph_hmm_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/hmm/graph_test_util.h"
#include "kernels/hmm/sparse_hmm_reference.h"

namespace gmmscore {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::vector<const HmmGraph*> Pointers(const std::vector<HmmGraph>& graphs) {
  std::vector<const HmmGraph*> out;
  for (const HmmGraph& g : graphs) out.push_back(&g);
  return out;
}

// RandomHmmGraph with a path of `frames` frames: its first initial state
// made final too where every path would be longer, drawn again where none
// fits (a chain without self-loops).
HmmGraph RandomGraphFor(int32_t n, int64_t frames, std::mt19937_64& rng) {
  for (;;) {
    HmmGraph g = RandomHmmGraph(n, std::max(1, n / 3), rng);
    if (g.MinFrames() > frames) {
      g.final_states.push_back(g.initial_states[0]);
      g.final_log_weight.push_back(std::log(0.5f));
      g.final_slot.push_back(-1);
    }
    const FloatMatrix flat(frames, static_cast<int64_t>(g.columns.size()), -1.0f);
    if (GraphViterbiReference(g, flat.view()).ok()) return g;
  }
}

// A batch of graphs and their emissions (T x columns), in a given order.
struct Batch {
  std::vector<HmmGraph> graphs;
  std::vector<FloatMatrix> data;
  std::vector<ConstMatrixView> views;

  void Add(int32_t n, int64_t frames, std::mt19937_64& rng) {
    graphs.push_back(RandomGraphFor(n, frames, rng));
    data.push_back(RandomLoglikes(frames, static_cast<int>(graphs.back().columns.size()), rng));
  }
  void Shuffle(std::mt19937_64& rng) {
    std::vector<size_t> order(graphs.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<HmmGraph> g;
    std::vector<FloatMatrix> d;
    for (size_t k : order) g.push_back(std::move(graphs[k])), d.push_back(std::move(data[k]));
    graphs = std::move(g);
    data = std::move(d);
  }
  void Finish() {
    views.clear();
    for (const FloatMatrix& m : data) views.push_back(m.view());
  }
};

// The score of a state sequence under the graph, in float64 as the
// reference adds it; -inf when the graph has no such path.
double PathScore(const HmmGraph& g, ConstMatrixView b, const std::vector<int32_t>& path) {
  if (path.size() != static_cast<size_t>(b.rows)) return kNegInf;
  for (int32_t s : path) {
    if (s < 0 || s >= g.num_states()) return kNegInf;
  }
  auto initial = std::find(g.initial_states.begin(), g.initial_states.end(), path[0]);
  if (initial == g.initial_states.end()) return kNegInf;
  double score = double{g.initial_log_weight[initial - g.initial_states.begin()]} + b.at(0, g.emission[path[0]]);
  for (size_t t = 1; t < path.size(); ++t) {
    const int32_t to = path[t];
    double weight = kNegInf;
    for (int32_t a = g.arc_begin[to]; a < g.arc_begin[to + 1]; ++a) {
      if (g.arc_source[a] == path[t - 1]) weight = g.arc_log_weight[a];
    }
    score = score + weight + b.at(t, g.emission[to]);
  }
  auto final = std::find(g.final_states.begin(), g.final_states.end(), path.back());
  if (final == g.final_states.end()) return kNegInf;
  return score + g.final_log_weight[final - g.final_states.begin()];
}

// The worst differences from the reference over a test, printed at its end.
struct Worst {
  std::string what;
  double log_likelihood = 0, gamma = 0, arc_counts = 0, final_counts = 0;
  int flips = 0, paths = 0;
  ~Worst() {
    std::printf("graph_error %s log_likelihood_rel %.3g gamma %.3g arc_counts %.3g final_counts %.3g "
                "path_flips %d of %d\n",
                what.c_str(), log_likelihood, gamma, arc_counts, final_counts, flips, paths);
  }
};

double MaxAbsDiff(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double d = std::fabs(got[k] - want[k]);
    worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
  }
  return worst;
}

void ExpectPosteriorsNear(const GraphPosteriors& got, const GraphPosteriors& want, bool with_gamma, Worst& worst) {
  const double rel = std::fabs(got.log_likelihood - want.log_likelihood) / std::max(1.0, std::fabs(want.log_likelihood));
  EXPECT_LE(rel, 1e-6) << got.log_likelihood << " vs " << want.log_likelihood;
  worst.log_likelihood = std::max(worst.log_likelihood, std::isnan(rel) ? 1.0 : rel);
  const double arcs = MaxAbsDiff(got.arc_counts, want.arc_counts);
  const double finals = MaxAbsDiff(got.final_counts, want.final_counts);
  EXPECT_LE(arcs, 1e-4);
  EXPECT_LE(finals, 1e-4);
  worst.arc_counts = std::max(worst.arc_counts, arcs);
  worst.final_counts = std::max(worst.final_counts, finals);
  if (with_gamma) {
    const double gamma = MaxAbsDiff(got.gamma, want.gamma);
    EXPECT_LE(gamma, 1e-4);
    worst.gamma = std::max(worst.gamma, gamma);
  } else {
    EXPECT_TRUE(got.gamma.empty());
  }
}

// The reference's path, or, where float rounding flipped a near tie, a
// valid path whose score agrees with the best within 1e-5 relative.
void ExpectBestPath(const HmmGraph& g, ConstMatrixView b, const ViterbiPath& got, const ViterbiPath& want,
                    Worst& worst) {
  ++worst.paths;
  const double rel = std::fabs(got.log_likelihood - want.log_likelihood) / std::max(1.0, std::fabs(want.log_likelihood));
  worst.log_likelihood = std::max(worst.log_likelihood, std::isnan(rel) ? 1.0 : rel);
  EXPECT_LE(rel, 1e-9) << got.log_likelihood << " vs " << want.log_likelihood;
  if (got.states == want.states) return;
  ++worst.flips;
  const double got_score = PathScore(g, b, got.states), want_score = PathScore(g, b, want.states);
  EXPECT_NEAR(got_score, want_score, 1e-5 * std::fabs(want_score)) << "a different path that is not a near tie";
}

void ExpectMatchesReference(const Batch& batch, bool float32_log_add, Worst& posteriors, Worst& paths) {
  const std::vector<const HmmGraph*> graphs = Pointers(batch.graphs);
  auto best = GraphViterbiCuda(graphs, batch.views);
  ASSERT_TRUE(best.ok()) << best.status();
  GraphBatchOptions options;
  options.want_gamma = true;
  options.float32_log_add = float32_log_add;
  auto post = GraphForwardBackwardCuda(graphs, batch.views, options);
  ASSERT_TRUE(post.ok()) << post.status();
  options.want_gamma = false;
  auto lean = GraphForwardBackwardCuda(graphs, batch.views, options);
  ASSERT_TRUE(lean.ok()) << lean.status();
  ASSERT_EQ(best->utterances.size(), graphs.size());
  ASSERT_EQ(post->utterances.size(), graphs.size());
  EXPECT_GT(post->device_seconds, 0.0);
  EXPECT_GT(best->device_seconds, 0.0);
  for (size_t u = 0; u < graphs.size(); ++u) {
    SCOPED_TRACE(testing::Message() << "utterance " << u << ": " << graphs[u]->num_states() << " states, "
                                    << batch.views[u].rows << " frames");
    auto want = GraphForwardBackwardReference(*graphs[u], batch.views[u]);
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectPosteriorsNear(post->utterances[u], *want, /*with_gamma=*/true, posteriors);
    // Without gamma: the same numbers, gamma left out.
    EXPECT_EQ(lean->utterances[u].log_likelihood, post->utterances[u].log_likelihood);
    EXPECT_EQ(lean->utterances[u].arc_counts, post->utterances[u].arc_counts);
    EXPECT_EQ(lean->utterances[u].final_counts, post->utterances[u].final_counts);
    EXPECT_TRUE(lean->utterances[u].gamma.empty());
    auto want_path = GraphViterbiReference(*graphs[u], batch.views[u]);
    ASSERT_TRUE(want_path.ok());
    ExpectBestPath(*graphs[u], batch.views[u], best->utterances[u], *want_path, paths);
  }
}

TEST(GraphHmmCudaTest, MatchesTheReferenceOnAMixedBatch) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  Batch batch;
  for (int32_t n : {1, 2, 7, 1024, 3000}) {
    for (int64_t frames : {1, 2, 320}) batch.Add(n, frames, rng);
  }
  batch.Shuffle(rng);
  batch.Finish();
  for (bool float32_log_add : {false, true}) {
    SCOPED_TRACE(testing::Message() << "float32_log_add " << float32_log_add);
    Worst posteriors{float32_log_add ? "mixed_fb_float32_log_add" : "mixed_fb_float64"};
    Worst paths{"mixed_viterbi"};
    ExpectMatchesReference(batch, float32_log_add, posteriors, paths);
  }
}

TEST(GraphHmmCudaTest, MatchesTheReferenceOnManySizes) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  Batch batch;
  for (int k = 0; k < 48; ++k) batch.Add(1 + static_cast<int32_t>(rng() % 700), 1 + static_cast<int64_t>(rng() % 400), rng);
  batch.Finish();
  Worst posteriors{"many_fb_float64"}, paths{"many_viterbi"};
  ExpectMatchesReference(batch, /*float32_log_add=*/false, posteriors, paths);
}

// A state with 400 incoming arcs: backpointers of two bytes.
TEST(GraphHmmCudaTest, ManyIncomingArcsTraceBackExactly) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> weight(std::log(0.05f), 0.0f);
  HmmGraphBuilder builder;
  const int32_t n = 401;
  for (int32_t s = 0; s < n; ++s) builder.AddState(s % 50);
  for (int32_t s = 0; s + 1 < n; ++s) {
    builder.AddArc(s, s, weight(rng));
    builder.AddArc(s, n - 1, weight(rng));
    builder.AddInitial(s, weight(rng));
  }
  builder.AddArc(n - 1, n - 1, weight(rng));
  builder.AddFinal(n - 1, 0.0f);
  std::vector<int32_t> columns(50);
  std::iota(columns.begin(), columns.end(), 0);
  Batch batch;
  batch.graphs.emplace_back();
  ASSERT_TRUE(builder.Finish(columns, &batch.graphs.back()).ok());
  batch.data.push_back(RandomLoglikes(200, 50, rng));
  batch.Finish();
  Worst posteriors{"wide_fb_float64"}, paths{"wide_viterbi"};
  ExpectMatchesReference(batch, /*float32_log_add=*/false, posteriors, paths);
}

// Every model state of every frame in one device matrix (with row
// padding and overlapping utterances), and the host matrices cut from it.
struct DeviceBatch {
  Batch host;
  FloatMatrix matrix;
  DeviceBuffer<float> device;
  DeviceScores scores;
};

absl::StatusOr<DeviceBatch> MakeDeviceBatch(int count, std::mt19937_64& rng) {
  DeviceBatch d;
  const int64_t rows = 900, model_states = 3 * 200 + 2, stride = model_states + 5;
  d.matrix = RandomLoglikes(rows, static_cast<int>(stride), rng);
  for (int k = 0; k < count; ++k) {
    const int32_t n = 1 + static_cast<int32_t>(rng() % 600);
    const int64_t frames = 1 + static_cast<int64_t>(rng() % 400);
    d.host.graphs.push_back(RandomGraphFor(n, frames, rng));
    const HmmGraph& g = d.host.graphs.back();
    const int64_t first = static_cast<int64_t>(rng() % (rows - frames + 1));
    d.scores.first_row.push_back(first);
    d.scores.frames.push_back(frames);
    FloatMatrix e(frames, static_cast<int64_t>(g.columns.size()));
    for (int64_t t = 0; t < frames; ++t) {
      for (size_t c = 0; c < g.columns.size(); ++c) e.row(t)[c] = d.matrix.row(first + t)[g.columns[c]];
    }
    d.host.data.push_back(std::move(e));
  }
  d.host.Finish();
  auto device = DeviceBuffer<float>::FromHost(d.matrix.data(), rows * stride);
  if (!device.ok()) return device.status();
  d.device = std::move(*device);
  d.scores.data = d.device.data();
  d.scores.rows = rows;
  d.scores.model_states = model_states;
  d.scores.row_stride = stride;
  return d;
}

void ExpectSamePosteriors(const GraphBatchPosteriors& a, const GraphBatchPosteriors& b) {
  ASSERT_EQ(a.utterances.size(), b.utterances.size());
  for (size_t u = 0; u < a.utterances.size(); ++u) {
    SCOPED_TRACE(testing::Message() << "utterance " << u);
    EXPECT_EQ(a.utterances[u].log_likelihood, b.utterances[u].log_likelihood);
    EXPECT_EQ(a.utterances[u].gamma, b.utterances[u].gamma);
    EXPECT_EQ(a.utterances[u].arc_counts, b.utterances[u].arc_counts);
    EXPECT_EQ(a.utterances[u].final_counts, b.utterances[u].final_counts);
  }
}

void ExpectSamePaths(const GraphBatchPaths& a, const GraphBatchPaths& b) {
  ASSERT_EQ(a.utterances.size(), b.utterances.size());
  for (size_t u = 0; u < a.utterances.size(); ++u) {
    EXPECT_EQ(a.utterances[u].log_likelihood, b.utterances[u].log_likelihood) << u;
    EXPECT_EQ(a.utterances[u].states, b.utterances[u].states) << u;
  }
}

TEST(GraphHmmCudaTest, DeviceScoresGiveTheHostEntriesResultsInChunksToo) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  auto d = MakeDeviceBatch(24, rng);
  ASSERT_TRUE(d.ok()) << d.status();
  const std::vector<const HmmGraph*> graphs = Pointers(d->host.graphs);
  GraphBatchOptions options;
  options.want_gamma = true;
  auto host_post = GraphForwardBackwardCuda(graphs, d->host.views, options);
  auto host_best = GraphViterbiCuda(graphs, d->host.views);
  ASSERT_TRUE(host_post.ok()) << host_post.status();
  ASSERT_TRUE(host_best.ok()) << host_best.status();
  auto stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok());
  // The whole batch at once, then in chunks (room for the largest
  // utterance's alphas and saved scores, 12 bytes a state and frame, or
  // backpointers, 1), then with the arcs left in global memory.
  int64_t largest = 0;
  for (size_t u = 0; u < graphs.size(); ++u) largest = std::max(largest, d->scores.frames[u] * graphs[u]->num_states());
  for (const auto& [chunked, shared_graphs] : {std::pair{false, true}, std::pair{true, true}, std::pair{false, false}}) {
    SCOPED_TRACE(testing::Message() << "chunked " << chunked << ", graphs in shared memory " << shared_graphs);
    options.memory_limit_bytes = chunked ? 12 * largest : 0;
    options.graphs_in_shared_memory = shared_graphs;
    auto post = GraphForwardBackwardOnDevice(graphs, d->scores, stream->get(), options);
    GraphBatchOptions viterbi_options;
    viterbi_options.memory_limit_bytes = chunked ? largest : 0;
    viterbi_options.graphs_in_shared_memory = shared_graphs;
    auto best = GraphViterbiOnDevice(graphs, d->scores, stream->get(), viterbi_options);
    ASSERT_TRUE(post.ok()) << post.status();
    ASSERT_TRUE(best.ok()) << best.status();
    ExpectSamePosteriors(*post, *host_post);
    ExpectSamePaths(*best, *host_best);
  }
  Worst posteriors{"device_fb_float64"}, paths{"device_viterbi"};
  for (size_t u = 0; u < graphs.size(); ++u) {
    auto want = GraphForwardBackwardReference(*graphs[u], d->host.views[u]);
    auto want_path = GraphViterbiReference(*graphs[u], d->host.views[u]);
    ASSERT_TRUE(want.ok() && want_path.ok());
    ExpectPosteriorsNear(host_post->utterances[u], *want, true, posteriors);
    ExpectBestPath(*graphs[u], d->host.views[u], host_best->utterances[u], *want_path, paths);
  }
}

// A two-state chain: state 0 in, state 1 out, so a path needs two frames.
HmmGraph Chain() {
  HmmGraphBuilder builder;
  builder.AddState(0);
  builder.AddState(1);
  builder.AddArc(0, 0, -0.5f);
  builder.AddArc(0, 1, -1.0f);
  builder.AddArc(1, 1, -0.5f);
  builder.AddInitial(0, 0.0f);
  builder.AddFinal(1, 0.0f);
  HmmGraph g;
  (void)builder.Finish({0, 1}, &g);
  return g;
}

TEST(GraphHmmCudaTest, NoPathNamesTheFirstUtteranceWithout) {
  SKIP_WITHOUT_GPU();
  const HmmGraph chain = Chain();
  FloatMatrix fine(4, 2, -1.0f), dead(5, 2, -1.0f), short_one(1, 2, -1.0f);
  dead.row(2)[0] = dead.row(2)[1] = -std::numeric_limits<float>::infinity();
  const std::vector<const HmmGraph*> graphs = {&chain, &chain, &chain, &chain};
  for (const auto& [views, named] :
       {std::pair{std::vector<ConstMatrixView>{fine.view(), fine.view(), short_one.view(), dead.view()}, "utterance 2"},
        std::pair{std::vector<ConstMatrixView>{fine.view(), dead.view(), fine.view(), short_one.view()}, "utterance 1"}}) {
    absl::Status status = GraphViterbiCuda(graphs, views).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(), testing::HasSubstr(named));
    status = GraphForwardBackwardCuda(graphs, views).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(), testing::HasSubstr(named));
  }
  // Device scores: row 1 is -inf for both model states.
  FloatMatrix matrix(4, 2, -2.0f);
  matrix.row(1)[0] = matrix.row(1)[1] = -std::numeric_limits<float>::infinity();
  auto device = DeviceBuffer<float>::FromHost(matrix.data(), 8);
  ASSERT_TRUE(device.ok());
  DeviceScores scores{device->data(), 4, 2, 2, {2, 0, 0}, {2, 3, 2}};
  const std::vector<const HmmGraph*> three = {&chain, &chain, &chain};
  absl::Status status = GraphViterbiOnDevice(three, scores, nullptr).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
  status = GraphForwardBackwardOnDevice(three, scores, nullptr).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
  // A NaN the graph reads is found on the device.
  matrix.row(3)[1] = std::nanf("");
  ASSERT_EQ(cudaMemcpy(device->data(), matrix.data(), 8 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  scores.first_row = {0, 2, 2};
  scores.frames = {1, 2, 2};  // utterance 0 has no path; utterance 1 is the first to read the NaN
  status = GraphForwardBackwardOnDevice(three, scores, nullptr).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
}

// Checks made before any device work: these run without a GPU too.
TEST(GraphHmmCudaTest, BadInputsAreInvalidArgumentsNamingTheUtterance) {
  const HmmGraph chain = Chain();
  HmmGraph broken = chain;
  broken.arc_log_weight[1] = std::numeric_limits<float>::quiet_NaN();
  FloatMatrix fine(3, 2, -1.0f), narrow(3, 1, -1.0f), empty(0, 2), nan(3, 2, -1.0f);
  nan.row(1)[1] = std::nanf("");
  const std::vector<const HmmGraph*> two = {&chain, &chain};
  auto expect_invalid = [](const absl::Status& status, const char* named) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), testing::HasSubstr(named));
  };
  for (const FloatMatrix* bad : {&narrow, &empty, &nan}) {
    const std::vector<ConstMatrixView> views = {fine.view(), bad->view()};
    expect_invalid(GraphViterbiCuda(two, views).status(), "utterance 1");
    expect_invalid(GraphForwardBackwardCuda(two, views).status(), "utterance 1");
  }
  const std::vector<ConstMatrixView> views = {fine.view(), fine.view()};
  expect_invalid(GraphViterbiCuda({&chain, &broken}, views).status(), "utterance 1");
  expect_invalid(GraphForwardBackwardCuda({&chain, nullptr}, views).status(), "utterance 1");
  expect_invalid(GraphViterbiCuda({&chain}, views).status(), "1 graphs but 2");

  // Device scores: nothing is read before these checks.
  const float* somewhere = reinterpret_cast<const float*>(uintptr_t{256});
  DeviceScores scores{somewhere, 10, 2, 4, {0, 8}, {3, 3}};
  expect_invalid(GraphViterbiOnDevice(two, scores, nullptr).status(), "utterance 1");  // rows 8..11 of 10
  scores.first_row = {0, 5};
  scores.model_states = 1;
  expect_invalid(GraphForwardBackwardOnDevice(two, scores, nullptr).status(), "utterance 0");  // reads state 1 of 1
  scores.model_states = 2;
  scores.frames = {3, 0};
  expect_invalid(GraphViterbiOnDevice(two, scores, nullptr).status(), "utterance 1");
  scores.frames = {3};
  expect_invalid(GraphViterbiOnDevice(two, scores, nullptr).status(), "2 graphs");
  scores.frames = {3, 3};
  scores.row_stride = 1;
  expect_invalid(GraphViterbiOnDevice(two, scores, nullptr).status(), "stride");

  // An empty batch is no work, device or not.
  EXPECT_TRUE(GraphViterbiCuda({}, {}).ok());
  auto none = GraphForwardBackwardOnDevice({}, DeviceScores(), nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->utterances.empty());
}

TEST(GraphHmmCudaTest, NoDeviceIsUnavailable) {
  const HmmGraph chain = Chain();
  FloatMatrix fine(3, 2, -1.0f);
  const std::vector<ConstMatrixView> views = {fine.view()};
  GraphBatchOptions options;
  if (CudaDeviceCount() > 0) options.device = 1000;  // no such device
  EXPECT_EQ(GraphForwardBackwardCuda({&chain}, views, options).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GraphViterbiCuda({&chain}, views, options.device).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gmmscore
