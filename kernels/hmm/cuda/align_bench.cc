// Forced alignment throughput with the en-us model on real speech: a corpus
// (transcripts + 16 kHz WAVs, e.g. pocketsphinx-testdata's librivox) is
// repeated --copies times into one batch, as an aligner serving many
// captioning streams or a corpus preparation job would see it, and aligned
// by the CUDA engine (scoring included) and, for reference, the CPU engine.
// Prints speech seconds, wall seconds per phase, real-time factors, and how
// far the GPU's word boundaries are from the CPU's on the corpus.
//
//   align_bench --model en-us/ --dict cmudict-en-us.dict --transcripts librivox/transcription \
//               --wav_dir librivox --copies 146 [--cpu_copies 4]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/hmm/ctm.h"
#include "kernels/hmm/cuda/device_align_engine.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/io/transcripts.h"
#include "kernels/io/wav_reader.h"

ABSL_FLAG(std::string, model, "", "Sphinx model directory");
ABSL_FLAG(std::string, dict, "", "pronunciation dictionary");
ABSL_FLAG(std::string, transcripts, "", "transcripts (Sphinx or Kaldi lines)");
ABSL_FLAG(std::string, wav_dir, "", "directory of <utterance>.wav");
ABSL_FLAG(int, copies, 146, "times the corpus is repeated in the GPU batch (146 x librivox = 1 hour)");
ABSL_FLAG(int, cpu_copies, 2, "times it is repeated for the CPU engine");
ABSL_FLAG(int, repeats, 3, "timed GPU runs after one warm-up");

namespace gmmscore {
namespace {

struct Run {
  double wall = 0, speech = 0;
  AlignTiming timing;
  std::string ctm;  // of the first copy
  int failed = 0;
};

Run AlignCopies(SphinxAligner& aligner, const std::vector<Transcript>& transcripts,
                const std::vector<FloatMatrix>& features, int copies) {
  std::vector<AlignInput> batch;
  for (int c = 0; c < copies; ++c) {
    for (size_t u = 0; u < features.size(); ++u) {
      batch.push_back({absl::StrCat(transcripts[u].utterance, c == 0 ? "" : absl::StrCat("#", c)), features[u].view(),
                       transcripts[u].words});
    }
  }
  Run run;
  const auto start = std::chrono::steady_clock::now();
  const auto results = aligner.Align(batch);
  run.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.timing = aligner.last_timing();
  for (size_t k = 0; k < batch.size(); ++k) {
    run.speech += batch[k].features.rows * aligner.frame_seconds();
    if (!results[k].ok()) {
      if (run.failed++ == 0) std::fprintf(stderr, "%s: %s\n", batch[k].utterance.c_str(), results[k].status().ToString().c_str());
      continue;
    }
    if (k < features.size()) run.ctm += WordCtm(batch[k].utterance, *results[k], aligner.frame_seconds());
  }
  return run;
}

void Print(const char* engine, const Run& r, size_t utterances) {
  std::printf("align,%s,utterances=%zu,speech_s=%.1f,wall_s=%.4f,xRT=%.0f,graphs_s=%.4f,scoring_s=%.4f,"
              "viterbi_s=%.4f,segments_s=%.4f,device_scoring_s=%.4f,device_viterbi_s=%.4f,failed=%d\n",
              engine, utterances, r.speech, r.wall, r.speech / r.wall, r.timing.graphs, r.timing.scoring,
              r.timing.viterbi, r.timing.segments, r.timing.device_scoring, r.timing.device_viterbi, r.failed);
}

int Main() {
  const std::string model = absl::GetFlag(FLAGS_model), dict = absl::GetFlag(FLAGS_dict);
  auto transcripts = ReadTranscripts(absl::GetFlag(FLAGS_transcripts));
  auto pipeline = FeaturePipelineForModel(model);
  if (!transcripts.ok() || !pipeline.ok()) {
    std::fprintf(stderr, "%s %s\n", transcripts.status().ToString().c_str(), pipeline.status().ToString().c_str());
    return 1;
  }
  std::vector<FloatMatrix> features;
  for (const Transcript& t : *transcripts) {
    const std::string wav = absl::StrCat(absl::GetFlag(FLAGS_wav_dir), "/", t.utterance, ".wav");
    auto audio = ReadSpeechFile(wav, 16000);
    auto feats = audio.ok() ? ComputeFeatures(*audio, *pipeline, wav) : absl::StatusOr<FloatMatrix>(audio.status());
    if (!feats.ok()) {
      std::fprintf(stderr, "%s\n", feats.status().ToString().c_str());
      return 1;
    }
    features.push_back(*std::move(feats));
  }
  std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({});
  auto cpu_aligner = SphinxAligner::Create(model, dict, cpu.get());
  SphinxAlignerOptions options;
  options.engine = CudaAlignEngineFactory(0);
  auto gpu_aligner = SphinxAligner::Create(model, dict, nullptr, options);
  if (!cpu_aligner.ok() || !gpu_aligner.ok()) {
    std::fprintf(stderr, "%s %s\n", cpu_aligner.status().ToString().c_str(), gpu_aligner.status().ToString().c_str());
    return 1;
  }
  const int cpu_copies = absl::GetFlag(FLAGS_cpu_copies), copies = absl::GetFlag(FLAGS_copies);
  const Run cpu_run = AlignCopies(**cpu_aligner, *transcripts, features, cpu_copies);
  Print("cpu", cpu_run, features.size() * cpu_copies);
  AlignCopies(**gpu_aligner, *transcripts, features, copies);  // warm-up
  Run best;
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    Run run = AlignCopies(**gpu_aligner, *transcripts, features, copies);
    Print("cuda", run, features.size() * copies);
    if (r == 0 || run.wall < best.wall) best = std::move(run);
  }
  auto cpu_ctm = ParseCtm(cpu_run.ctm, "cpu");
  auto gpu_ctm = ParseCtm(best.ctm, "cuda");
  const BoundaryComparison c = CompareWordBoundaries(*cpu_ctm, *gpu_ctm);
  std::printf("cuda_vs_cpu,words=%d,mismatched_utterances=%zu,median_ms=%.0f,p90_ms=%.0f,max_ms=%.0f\n", c.words,
              c.mismatched.size(), c.Percentile(50), c.Percentile(90), c.Percentile(100));
  std::printf("best,cuda,xRT=%.0f (an hour of speech in %.3f s)\n", best.speech / best.wall, 3600.0 * best.wall / best.speech);
  return best.failed == 0 && cpu_run.failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gmmscore::Main();
}
