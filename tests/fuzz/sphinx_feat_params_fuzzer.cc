// feat.params, through to the front end: whatever options pass our checks
// must build a sphinxbase front end that runs on a short fixed signal
// without aborting, exiting or producing non-finite cepstra.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/sphinx_model.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  absl::StatusOr<SphinxFeatParams> params = ParseSphinxFeatParams(fuzz::Bytes(data, size), fuzz::kInputName);
  fuzz::CheckNamesInput(params.status());
  if (!params.ok()) return 0;
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineFromFeatParams(*params, fuzz::kInputName);
  fuzz::CheckNamesInput(pipeline.status());
  if (!pipeline.ok()) return 0;
  static const std::vector<int16_t> samples = [] {
    std::vector<int16_t> s(1200);
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<int16_t>(((i * 7919) % 2001) - 1000);
    return s;
  }();
  PcmAudio audio{static_cast<int>(pipeline->front_end.sample_rate), samples};
  if (audio.sample_rate != pipeline->front_end.sample_rate) return 0;  // fractional rates: no WAV has them
  absl::StatusOr<FloatMatrix> features = ComputeFeatures(audio, *pipeline, fuzz::kInputName);
  fuzz::CheckNamesInput(features.status());
  if (features.ok()) {
    for (const float v : features->span()) {
      if (!std::isfinite(v)) std::abort();
    }
  }
  return 0;
}
