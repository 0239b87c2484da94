// AnswerVerifier: load never hides wrong answers. A sampled share of the
// server's answers is scored again by the offline engine (the same model
// files, LoadModel + the CPU backend) on a thread of its own and compared.
//
//   GMM_ASSIGN_OR_RETURN(auto verifier, AnswerVerifier::Create(models, &features, {.fraction = 0.01}));
//   if (verifier->ShouldSample(stream, chunk)) {
//     verifier->SubmitAnswer(stream, first_frame, frames, answer);  // as received
//   }
//   VerifyCounts counts = verifier->TakeCounts();   // waits for the queue to empty
//
// When: beside the load by default, at the lowest priority, skipping what it
// has no time for; or, with VerifyOptions::after_run, every sampled answer
// is held (up to a memory bound) and checked when TakeCounts is called, at
// the end of a run, so that the check takes nothing from the load it checks.
// Queued checks are scored together, one CPU backend call per model for up
// to kBatchFrames frames (the model read once, not once per answer).
//
// Agreement: every element within tolerance * max(1, |offline|), i.e.
// 1e-3 nats absolute near zero and 1e-3 relative for large magnitudes (a
// float32 ulp at -4000 nats is 2.4e-4). Only per-model matrices are
// checked; a fused matrix is not.
//
// Thread safety: ShouldSample, Submit, SubmitAnswer, CountsSoFar and
// TakeCounts may be called from any thread.
#ifndef GMMSCORE_CLIENT_LOAD_ANSWER_VERIFIER_H_
#define GMMSCORE_CLIENT_LOAD_ANSWER_VERIFIER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/load/feature_source.h"
#include "client/load/lazy_answer.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore::load {

struct VerifyOptions {
  // Share of answers checked, in [0, 1]; which ones is a hash of (stream,
  // chunk) and `seed`, so a run checks the same chunks every time.
  double fraction = 0.0;
  double tolerance = 1e-3;
  // The answers are half precision (OutputOptions.float16): MatricesAgree
  // allows the encoding's rounding on top of `tolerance`.
  bool half_precision = false;
  // Checks waiting at most; more are skipped (counted), so that a slow
  // verifier never slows the load down. Not with after_run.
  int max_queue = 256;
  uint64_t seed = 1;
  // Hold the checks until TakeCounts (the end of a run) instead of running
  // them beside the load. Held answers take memory: past max_held_bytes
  // (their bytes as received, or their matrices) more are skipped (counted).
  bool after_run = false;
  int64_t max_held_bytes = int64_t{512} << 20;
  // The CPU backend's threads for held checks. Beside the load it is one
  // (verification must not take cores from the load it checks).
  int after_run_threads = 4;
};

struct VerifyCounts {
  int64_t checked = 0;     // matrices compared
  int64_t mismatched = 0;  // of those, outside the tolerance (or misshapen)
  int64_t skipped = 0;     // sampled but dropped: the queue was full
  double max_error = 0;    // largest |server - offline| / max(1, |offline|)
  std::string first_mismatch;  // where and by how much, "" if none
};

// Compares `got` (the server's) with `want` (offline); the largest scaled
// error goes to *max_error; true when within `tolerance`. On failure *where
// names the frame and state (or the shapes). A -infinity in `got` is a state
// a sparse answer (beam, top_k) dropped: it agrees when offline it scores no
// higher than every state kept in its frame (within `tolerance`).
// With `half_precision` (answers sent as OutputOptions.float16) each value
// may also be off by the encoding's bound, 2^-11 of its distance below its
// frame's best offline value; *max_error then counts only the error beyond
// that bound.
bool MatricesAgree(const FloatMatrix& got, const FloatMatrix& want, double tolerance,
                   double* max_error, std::string* where, bool half_precision = false);

class AnswerVerifier {
 public:
  // models[m]: the model the server serves under the m-th name of the
  // streams' config (null: that model is not checked). `features` must
  // outlive the verifier. The engine's error if it cannot prepare a model.
  static absl::StatusOr<std::unique_ptr<AnswerVerifier>> Create(
      std::vector<std::shared_ptr<const DiagGmmModel>> models, const FeatureSource* features,
      const VerifyOptions& options);
  // Finishes the queued checks, drops held ones (after_run, no TakeCounts
  // since they came: nobody would read their counts), stops its thread.
  ~AnswerVerifier();

  AnswerVerifier(const AnswerVerifier&) = delete;
  AnswerVerifier& operator=(const AnswerVerifier&) = delete;

  // Batches of queued checks are this many frames at most; a single longer
  // check is a batch of its own.
  static constexpr int kBatchFrames = 1024;

  bool ShouldSample(int stream, int64_t chunk) const;
  // Queues the check of one answer: scores[m] is the server's matrix for
  // model m (empty: not sent) for frames [first_frame, first_frame + frames)
  // of `stream`. Waits for nothing but the queue's lock, which the
  // verifier's thread (at the lowest priority) holds only to move check
  // pointers or to count: a few instructions, no free (a queue block's
  // allocation now and then).
  void Submit(int stream, int64_t first_frame, int frames, std::vector<FloatMatrix> scores);
  // The same for an answer as it came off the wire: it is parsed on the
  // verifier's thread, not the caller's. Beside the load the copy shares
  // gRPC's slices; held (after_run), it is copied into a slice of its own
  // (OwnCopy). An answer that does not parse, or carries no scores for a
  // model the verifier checks, is a mismatch.
  void SubmitAnswer(int stream, int64_t first_frame, int frames, LazyStreamAnswer answer);
  // Releases held checks (after_run), waits until every queued check is
  // done; the counts since the last call. Checks submitted after it are
  // held again. One call at a time, once the run's answers are submitted
  // (LoadRunner calls it when every stream is done).
  VerifyCounts TakeCounts();
  // The counts since the last TakeCounts, without waiting for anything
  // (whether held checks wait, in tests).
  VerifyCounts CountsSoFar();

 private:
  struct Check {
    int stream;
    int64_t first_frame;
    int frames;
    std::vector<FloatMatrix> scores;  // the matrices, or
    std::optional<LazyStreamAnswer> answer;  // the bytes they are parsed from
    int64_t bytes;  // held, for VerifyOptions::max_held_bytes
  };
  AnswerVerifier(const FeatureSource* features, const VerifyOptions& options);
  static LazyStreamAnswer OwnCopy(const LazyStreamAnswer& answer);
  void Enqueue(std::unique_ptr<Check> check);
  void WorkerLoop();
  // Moves checks from the queue's front to batch_, up to kBatchFrames frames.
  void TakeBatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks batch_: parsed, its frames gathered, each model scored once.
  void RunChecks();
  // batch_'s checks with their matrices; those whose answer does not parse,
  // or lacks a checked model's scores, are counted as mismatches and left
  // out.
  std::vector<const Check*> ParseBatch();
  // Fills check->scores from check->answer; the error if it does not parse
  // or lacks a checked model's scores.
  absl::Status ParseAnswer(Check* check) const;
  // The checks' frames, one after another.
  FloatMatrix FramesOf(const std::vector<const Check*>& checks) const;
  // Scores `frames` (FramesOf(checks)) with model m and compares each check
  // that carries its matrix with its own rows.
  void CheckModel(int m, const std::vector<const Check*>& checks, const FloatMatrix& frames);
  // The answer carries model `model`'s matrix (empty: not sent).
  static bool HasScores(const Check& check, int model);
  // Counts one compared matrix (or a failure to compare: `agree` false);
  // `model` ("model 2, " or "") names it in the first mismatch.
  void Count(const Check& check, const std::string& model, bool agree, double max_error,
             const std::string& where);

  const VerifyOptions options_;
  const FeatureSource* const features_;
  std::unique_ptr<ScoringBackend> backend_;
  std::vector<std::shared_ptr<const PreparedModel>> prepared_;  // null where not checked

  absl::Mutex mu_;
  std::deque<std::unique_ptr<Check>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Check>> batch_;  // the worker's own (busy_ while it has some)
  bool holding_ ABSL_GUARDED_BY(mu_);  // after_run, until TakeCounts
  int64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  VerifyCounts counts_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;
};

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_ANSWER_VERIFIER_H_
