// The aligner's engine (and Baum-Welch's forward-backward) by backend name,
// for the commands and the daemon:
//   "cpu"            the host engine over `host_scorer` (no factory: the
//                    aligner's default)
//   "cuda", "cuda:N" scoring and Viterbi on GPU N (cuda/device_align_engine.h)
//   "auto"           cuda:0 when a GPU answers, else cpu
//
//   GMM_ASSIGN_OR_RETURN(AlignEngineFactory engine, AlignEngineFor(flag));
//   options.engine = engine;   // empty for the host engine
//
// INVALID_ARGUMENT for other names; UNAVAILABLE for cuda in a build without it.
#ifndef GMMSCORE_KERNELS_BACKENDS_ALIGN_ENGINE_FACTORY_H_
#define GMMSCORE_KERNELS_BACKENDS_ALIGN_ENGINE_FACTORY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/hmm/align_engine.h"
#include "kernels/hmm/sphinx_baum_welch.h"

namespace gmmscore {

absl::StatusOr<AlignEngineFactory> AlignEngineFor(absl::string_view name);

// Baum-Welch's forward-backward by the same names: empty for "cpu" (the CPU
// recursions), the device's for "cuda[:N]" (and "auto" with a GPU).
absl::StatusOr<GraphPosteriorsBatch> ForwardBackwardFor(absl::string_view name);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_BACKENDS_ALIGN_ENGINE_FACTORY_H_
