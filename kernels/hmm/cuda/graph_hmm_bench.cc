// The batched graph recursions on the GPU at forced-alignment shapes:
// utterance-like graphs (words of 2-6 phones, 3 states a phone with
// self-loops, next arcs and a skip, optional silence after a word, one word
// in ten with two pronunciations), scores of every model state in one
// device matrix as the aligner leaves them (GraphViterbiOnDevice and
// GraphForwardBackwardOnDevice), random in [-30, -1]. Three cases:
//   batch:  B utterances of about `states` states and T frames each;
//   long:   one utterance of `long_states` states and `long_frames` frames;
//   mixed:  B utterances of T uniform in [100, 3000], states about T / 2.3.
// Prints per case and pass the best device time of `repeats` runs, frames
// per second and times real time at 100 frames a second; then one call of
// each host entry (validation, packing and upload included) on the batch.
//
//   graph_hmm_bench [--utterances 1000] [--states 300] [--frames 700] [--model_states 5000]
//                   [--long_states 3000] [--long_frames 3000] [--repeats 3] [--cases batch,long,mixed]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/hmm/cuda/graph_hmm_cuda.h"

ABSL_FLAG(int, utterances, 1000, "utterances in the batch and mixed cases");
ABSL_FLAG(int, states, 300, "states per utterance graph (about) in the batch case");
ABSL_FLAG(int, frames, 700, "frames per utterance in the batch case");
ABSL_FLAG(int, model_states, 5000, "model states (senones) scored per frame");
ABSL_FLAG(int, long_states, 3000, "states of the long utterance");
ABSL_FLAG(int, long_frames, 3000, "frames of the long utterance");
ABSL_FLAG(int, pool_rows, 32768, "rows of the device score matrix; utterances read windows of it");
ABSL_FLAG(int, repeats, 3, "timed runs after one warm-up");
ABSL_FLAG(std::string, cases, "batch,long,mixed", "cases to run");
ABSL_FLAG(bool, host_entry, true, "also time one call of each host entry on the batch case");

namespace gmmscore {
namespace {

// An utterance graph of at least `target` states over model states
// [0, model_states).
HmmGraph UtteranceGraph(int target, int model_states, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> stay(std::log(0.4f), std::log(0.8f));
  HmmGraphBuilder builder;
  std::vector<int32_t> columns;
  std::unordered_map<int32_t, int32_t> column_of;
  int states = 0;
  auto add_state = [&]() {
    const int32_t senone = static_cast<int32_t>(rng() % model_states);
    auto [it, added] = column_of.emplace(senone, static_cast<int32_t>(columns.size()));
    if (added) columns.push_back(senone);
    ++states;
    return builder.AddState(it->second);
  };
  // A chain of phones entered from `from` (initial when empty); its last state.
  auto add_chain = [&](int phones, const std::vector<int32_t>& from) {
    int32_t last = -1;
    for (int p = 0; p < phones; ++p) {
      const int32_t s0 = add_state(), s1 = add_state(), s2 = add_state();
      for (int32_t s : {s0, s1, s2}) builder.AddArc(s, s, stay(rng));
      builder.AddArc(s0, s1, std::log(0.4f));
      builder.AddArc(s1, s2, std::log(0.4f));
      builder.AddArc(s0, s2, std::log(0.1f));  // skip
      if (last >= 0) {
        builder.AddArc(last, s0, std::log(0.4f));
      } else if (from.empty()) {
        builder.AddInitial(s0, 0.0f);
      } else {
        for (int32_t f : from) builder.AddArc(f, s0, 0.0f);
      }
      last = s2;
    }
    return last;
  };
  std::vector<int32_t> exits;
  while (states < target) {
    const int phones = 2 + static_cast<int>(rng() % 5);
    std::vector<int32_t> word = {add_chain(phones, exits)};
    if (rng() % 10 == 0) word.push_back(add_chain(phones, exits));  // a second pronunciation
    if (rng() % 3 == 0) word.push_back(add_chain(1, word));         // optional silence after it
    exits = std::move(word);
  }
  for (int32_t s : exits) builder.AddFinal(s, std::log(0.4f));
  HmmGraph graph;
  const absl::Status status = builder.Finish(std::move(columns), &graph);
  if (!status.ok()) std::fprintf(stderr, "graph: %s\n", status.ToString().c_str());
  return graph;
}

struct Case {
  std::string name;
  std::vector<HmmGraph> graphs;
  std::vector<int64_t> frames;
};

Case MakeCase(const std::string& name, int model_states, std::mt19937_64& rng) {
  Case c{name, {}, {}};
  const int b = absl::GetFlag(FLAGS_utterances);
  if (name == "batch") {
    for (int u = 0; u < b; ++u) {
      c.graphs.push_back(UtteranceGraph(absl::GetFlag(FLAGS_states), model_states, rng));
      c.frames.push_back(absl::GetFlag(FLAGS_frames));
    }
  } else if (name == "long") {
    c.graphs.push_back(UtteranceGraph(absl::GetFlag(FLAGS_long_states), model_states, rng));
    c.frames.push_back(absl::GetFlag(FLAGS_long_frames));
  } else if (name == "mixed") {
    for (int u = 0; u < b; ++u) {
      const int64_t frames = 100 + static_cast<int64_t>(rng() % 2901);
      c.graphs.push_back(UtteranceGraph(std::clamp<int>(frames / 2.3, 50, 3000), model_states, rng));
      c.frames.push_back(frames);
    }
  }
  return c;
}

// Uniform in [-30, -1], fast enough for a few hundred million values.
void FillScores(std::vector<float>& out, uint64_t seed) {
  uint64_t x = seed | 1;
  for (float& v : out) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = -1.0f - 29.0f * static_cast<float>(x >> 40) / static_cast<float>(1 << 24);
  }
}

struct Timing {
  double best_device = 1e30, best_call = 1e30;
  double log_likelihood = 0;
};

template <typename Run>
bool Time(Run run, Timing& timing) {
  for (int r = 0; r <= absl::GetFlag(FLAGS_repeats); ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto out = run();
    const double call = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.status().ToString().c_str());
      return false;
    }
    timing.log_likelihood = out->utterances[0].log_likelihood;
    if (r > 0 || absl::GetFlag(FLAGS_repeats) == 0) {
      timing.best_device = std::min(timing.best_device, out->device_seconds);
      timing.best_call = std::min(timing.best_call, call);
    }
  }
  return true;
}

void Report(const Case& c, const char* pass, const Timing& t) {
  int64_t frames = 0, states = 0, arcs = 0;
  for (size_t u = 0; u < c.graphs.size(); ++u) {
    frames += c.frames[u];
    states += c.graphs[u].num_states();
    arcs += c.graphs[u].num_arcs();
  }
  const double b = static_cast<double>(c.graphs.size());
  std::printf("graph_bench case=%s pass=%s B=%zu states=%.0f arcs=%.0f T=%.0f device_ms=%.3f frames_per_s=%.3g "
              "xRT=%.3g call_ms=%.1f ll0=%.6g\n",
              c.name.c_str(), pass, c.graphs.size(), states / b, arcs / b, frames / b, t.best_device * 1e3,
              frames / t.best_device, frames / 100.0 / t.best_device, t.best_call * 1e3, t.log_likelihood);
  std::fflush(stdout);
}

int Main() {
  const int model_states = absl::GetFlag(FLAGS_model_states);
  const int pool_rows = absl::GetFlag(FLAGS_pool_rows);
  std::mt19937_64 rng(1);
  std::vector<float> pool(static_cast<size_t>(pool_rows) * model_states);
  FillScores(pool, 12345);
  auto device = DeviceBuffer<float>::FromHost(pool.data(), pool.size());
  if (!device.ok()) {
    std::fprintf(stderr, "%s\n", device.status().ToString().c_str());
    return 1;
  }
  auto stream = CudaStream::Create();
  if (!stream.ok()) return 1;
  const std::vector<std::string> cases = absl::StrSplit(absl::GetFlag(FLAGS_cases), ',');
  for (const std::string& name : cases) {
    const Case c = MakeCase(name, model_states, rng);
    if (c.graphs.empty()) continue;
    std::vector<const HmmGraph*> graphs;
    for (const HmmGraph& g : c.graphs) graphs.push_back(&g);
    DeviceScores scores{device->data(), pool_rows, model_states, model_states, {}, c.frames};
    for (size_t u = 0; u < c.frames.size(); ++u) {
      if (c.frames[u] > pool_rows) return 1;
      scores.first_row.push_back(static_cast<int64_t>(rng() % (pool_rows - c.frames[u] + 1)));
    }
    Timing viterbi, fb64, fb32, fb_gamma;
    GraphBatchOptions options;
    if (!Time([&] { return GraphViterbiOnDevice(graphs, scores, stream->get()); }, viterbi)) return 1;
    Report(c, "viterbi", viterbi);
    if (!Time([&] { return GraphForwardBackwardOnDevice(graphs, scores, stream->get(), options); }, fb64)) return 1;
    Report(c, "fb_float64", fb64);
    if (name == "batch") {  // the graphs' arcs left in global memory, for comparison
      GraphBatchOptions global;
      global.graphs_in_shared_memory = false;
      Timing v, fb;
      if (!Time([&] { return GraphViterbiOnDevice(graphs, scores, stream->get(), global); }, v)) return 1;
      Report(c, "viterbi_global_graph", v);
      if (!Time([&] { return GraphForwardBackwardOnDevice(graphs, scores, stream->get(), global); }, fb)) return 1;
      Report(c, "fb_float64_global_graph", fb);
    }
    options.float32_log_add = true;
    if (!Time([&] { return GraphForwardBackwardOnDevice(graphs, scores, stream->get(), options); }, fb32)) return 1;
    Report(c, "fb_float32_log_add", fb32);
    options.float32_log_add = false;
    options.want_gamma = true;
    if (name != "mixed") {  // mixed: gigabytes of gamma to copy back
      if (!Time([&] { return GraphForwardBackwardOnDevice(graphs, scores, stream->get(), options); }, fb_gamma)) {
        return 1;
      }
      Report(c, "fb_float64_gamma", fb_gamma);
    }

    if (name == "batch" && absl::GetFlag(FLAGS_host_entry)) {
      // The same scores as host matrices, frames x graph columns.
      std::vector<FloatMatrix> data;
      std::vector<ConstMatrixView> views;
      for (size_t u = 0; u < c.graphs.size(); ++u) {
        const HmmGraph& g = c.graphs[u];
        FloatMatrix m(c.frames[u], static_cast<int64_t>(g.columns.size()));
        for (int64_t t = 0; t < c.frames[u]; ++t) {
          const float* row = pool.data() + (scores.first_row[u] + t) * int64_t{model_states};
          for (size_t k = 0; k < g.columns.size(); ++k) m.row(t)[k] = row[g.columns[k]];
        }
        data.push_back(std::move(m));
      }
      for (const FloatMatrix& m : data) views.push_back(m.view());
      const int repeats = absl::GetFlag(FLAGS_repeats);
      absl::SetFlag(&FLAGS_repeats, 0);
      Timing host_viterbi, host_fb;
      if (!Time([&] { return GraphViterbiCuda(graphs, views); }, host_viterbi)) return 1;
      Report(c, "host_viterbi", host_viterbi);
      if (!Time([&] { return GraphForwardBackwardCuda(graphs, views); }, host_fb)) return 1;
      Report(c, "host_fb_float64", host_fb);
      absl::SetFlag(&FLAGS_repeats, repeats);
      if (host_viterbi.log_likelihood != viterbi.log_likelihood) {
        std::fprintf(stderr, "host and device Viterbi disagree: %.17g vs %.17g\n", host_viterbi.log_likelihood,
                     viterbi.log_likelihood);
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gmmscore::Main();
}
