// AlignEngine: where an aligner's senone scoring and Viterbi run. The host
// engine scores each utterance's senones through a ScoringBackend and runs
// the CPU recursions (sparse_hmm_cpu.h); the CUDA engine
// (cuda/device_align_engine.h) scores a batch on the GPU and runs Viterbi
// there without the scores leaving the device.
//
//   std::unique_ptr<AlignEngine> engine = MakeHostAlignEngine(model, cpu_backend, &pool);
//   std::vector<absl::StatusOr<ViterbiPath>> paths = engine->BestPaths(graphs, features, &timing);
//
// A graph's columns are senone ids of the engine's model. Each utterance
// succeeds or fails alone (INVALID_ARGUMENT for features of the wrong
// dimension or not finite, FAILED_PRECONDITION for no path); a failure of
// the engine itself (device lost, out of memory) fails every utterance of
// the batch with its status.
// Thread safety: BestPaths may be called from one thread at a time.
#ifndef GMMSCORE_KERNELS_HMM_ALIGN_ENGINE_H_
#define GMMSCORE_KERNELS_HMM_ALIGN_ENGINE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/core/thread_pool.h"
#include "kernels/hmm/hmm_graph.h"
#include "kernels/hmm/hmm_reference.h"
#include "kernels/model/tied_mixture_model.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// Where a batch spent its time, seconds: wall time per phase, and the
// device's own time where an engine knows it (0 otherwise).
struct AlignTiming {
  double graphs = 0, scoring = 0, viterbi = 0, segments = 0;
  double device_scoring = 0, device_viterbi = 0;
};

class AlignEngine {
 public:
  virtual ~AlignEngine() = default;
  // "cpu", "cuda:0", ...
  virtual std::string name() const = 0;
  // The best path of graphs[u] over the senone scores of features[u].
  virtual std::vector<absl::StatusOr<ViterbiPath>> BestPaths(absl::Span<const HmmGraph* const> graphs,
                                                             absl::Span<const ConstMatrixView> features,
                                                             AlignTiming* timing) = 0;
};

// Makes an engine for a model (the aligner's senones).
using AlignEngineFactory =
    std::function<absl::StatusOr<std::unique_ptr<AlignEngine>>(std::shared_ptr<const TiedMixtureModel>)>;

// Scoring on `scorer` (only each graph's senones: TiedMixtureModel::SubsetStates),
// Viterbi on the CPU over `pool` (null: the calling thread). Both must
// outlive the engine.
std::unique_ptr<AlignEngine> MakeHostAlignEngine(std::shared_ptr<const TiedMixtureModel> model,
                                                 ScoringBackend* scorer, ThreadPool* pool);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_ALIGN_ENGINE_H_
