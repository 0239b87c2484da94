#include "client/load/answer_verifier.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/core/status_macros.h"
#include "kernels/core/thread_name.h"
#include "grpcpp/support/slice.h"
#include "kernels/cpu/cpu_backend.h"
#include "proto/wire_convert.h"

namespace gmmscore::load {
namespace {

// The calling thread at the lowest priority Linux has (SCHED_IDLE): it runs
// only on cores that the daemon, gRPC and the pacers leave idle, so that on
// a host shared with the daemon the check does not become part of the
// capacity it checks. (nice 19 was not enough: on a 16-core H100 host five
// verifiers at nice 19 still took 3 cores while the daemon's answers waited.)
// What it has no time for waits in its queue (VerifyOptions::max_queue, 256)
// and is checked once the point ends; past that, sampled answers are skipped
// (counted). Where SCHED_IDLE is refused, nice 19.
void YieldToTheLoad() {
#if defined(__linux__)
  const sched_param param{.sched_priority = 0};
  if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) {  // 0: this thread on Linux
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  }
#endif
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The CPU backend made on a thread at the lowest priority, so that its
// pool's threads, which inherit it, are there too: with after_run they
// check on several cores, and a generator done before the others must not
// take those cores from the load still measured.
std::unique_ptr<ScoringBackend> CreateIdleBackend(int num_threads) {
  std::unique_ptr<ScoringBackend> backend;
  std::thread([&] {
    YieldToTheLoad();
    backend = CreateCpuBackend({.num_threads = num_threads});
  }).join();
  return backend;
}

}  // namespace

bool MatricesAgree(const FloatMatrix& got, const FloatMatrix& want, double tolerance,
                   double* max_error, std::string* where, bool half_precision) {
  if (got.rows() != want.rows() || got.cols() != want.cols()) {
    *where = absl::StrFormat("shape %dx%d, offline %dx%d", got.rows(), got.cols(), want.rows(),
                             want.cols());
    return false;
  }
  bool agree = true;
  auto disagree = [&](const std::string& what) {
    if (agree) *where = what;
    agree = false;
  };
  for (int64_t t = 0; t < got.rows(); ++t) {
    double lowest_kept = std::numeric_limits<double>::infinity();
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t s = 0; s < got.cols(); ++s) {
      if (got.at(t, s) != -std::numeric_limits<float>::infinity()) {
        lowest_kept = std::min<double>(lowest_kept, want.at(t, s));
      }
      best = std::max<double>(best, want.at(t, s));
    }
    for (int64_t s = 0; s < got.cols(); ++s) {
      const double g = got.at(t, s), w = want.at(t, s);
      const double scale = std::max(1.0, std::abs(w));
      if (g == -std::numeric_limits<double>::infinity()) {
        // Dropped: only wrong if it beats a state that was kept.
        const double excess = (w - lowest_kept) / scale;
        if (excess > *max_error) *max_error = excess;
        if (excess > tolerance) {
          disagree(absl::StrFormat("frame %d state %d: dropped by the server, offline %.6g beats "
                                   "a kept state's %.6g",
                                   t, s, w, lowest_kept));
        }
        continue;
      }
      // The half encoding's own rounding (proto/half_float.h) is not an error.
      const double rounding = half_precision && std::isfinite(best) ? std::ldexp(best - w, -11) : 0;
      const double error = std::isfinite(g)
                               ? std::max(0.0, std::abs(g - w) - rounding) / scale
                               : std::numeric_limits<double>::infinity();
      if (error > *max_error) *max_error = error;
      if (error > tolerance) {
        disagree(absl::StrFormat("frame %d state %d: server %.6g, offline %.6g", t, s, g, w));
      }
    }
  }
  return agree;
}

absl::StatusOr<std::unique_ptr<AnswerVerifier>> AnswerVerifier::Create(
    std::vector<std::shared_ptr<const DiagGmmModel>> models, const FeatureSource* features,
    const VerifyOptions& options) {
  std::unique_ptr<AnswerVerifier> verifier(new AnswerVerifier(features, options));
  for (auto& model : models) {
    if (model == nullptr) {
      verifier->prepared_.push_back(nullptr);
      continue;
    }
    absl::StatusOr<std::shared_ptr<const PreparedModel>> prepared =
        verifier->backend_->Prepare(std::move(model));
    if (!prepared.ok()) return prepared.status();
    verifier->prepared_.push_back(*std::move(prepared));
  }
  return verifier;
}

AnswerVerifier::AnswerVerifier(const FeatureSource* features, const VerifyOptions& options)
    : options_(options),
      features_(features),
      // Beside the load, one thread: verification must not take cores from
      // the load it checks. Held checks run when the load is over.
      backend_(CreateIdleBackend(options.after_run ? std::max(options.after_run_threads, 1) : 1)),
      holding_(options.after_run),
      worker_([this] {
        NameCurrentThread("load-verify");
        YieldToTheLoad();
        WorkerLoop();
      }) {}

AnswerVerifier::~AnswerVerifier() {
  std::deque<std::unique_ptr<Check>> unread;  // held for a TakeCounts that never came
  {
    absl::MutexLock lock(&mu_);
    if (holding_) unread.swap(queue_);
    stopping_ = true;
  }
  worker_.join();
}

bool AnswerVerifier::ShouldSample(int stream, int64_t chunk) const {
  if (options_.fraction <= 0) return false;
  if (options_.fraction >= 1) return true;
  const uint64_t h = SplitMix64(options_.seed ^ SplitMix64((uint64_t(stream) << 40) ^ chunk));
  return static_cast<double>(h >> 11) * 0x1p-53 < options_.fraction;
}

void AnswerVerifier::Submit(int stream, int64_t first_frame, int frames,
                            std::vector<FloatMatrix> scores) {
  int64_t bytes = 0;
  for (const FloatMatrix& m : scores) bytes += m.rows() * m.cols() * int64_t{sizeof(float)};
  Enqueue(std::make_unique<Check>(
      Check{stream, first_frame, frames, std::move(scores), std::nullopt, bytes}));
}

void AnswerVerifier::SubmitAnswer(int stream, int64_t first_frame, int frames,
                                  LazyStreamAnswer answer) {
  if (options_.after_run) answer = OwnCopy(answer);
  const int64_t bytes = static_cast<int64_t>(answer.bytes.Length());
  Enqueue(
      std::make_unique<Check>(Check{stream, first_frame, frames, {}, std::move(answer), bytes}));
}

// The answer's bytes in one slice of their own. gRPC's slices of a
// received message may be views of a larger read buffer, which a held
// answer would keep alive whole: max_held_bytes would not bound the memory.
LazyStreamAnswer AnswerVerifier::OwnCopy(const LazyStreamAnswer& answer) {
  grpc::Slice contiguous;
  LazyStreamAnswer own;
  if (!answer.bytes.DumpToSingleSlice(&contiguous).ok()) return own;  // empty: a mismatch
  grpc::Slice copied(contiguous.begin(), contiguous.size());  // copies
  own.bytes = grpc::ByteBuffer(&copied, 1);
  return own;
}

// A check that does not fit is freed after the lock is released (a
// parameter outlives the function's locals).
void AnswerVerifier::Enqueue(std::unique_ptr<Check> check) {
  absl::MutexLock lock(&mu_);
  const bool full = holding_ ? held_bytes_ + check->bytes > options_.max_held_bytes
                             : static_cast<int>(queue_.size()) >= options_.max_queue;
  if (full) {
    ++counts_.skipped;
    return;
  }
  if (holding_) held_bytes_ += check->bytes;
  queue_.push_back(std::move(check));
}

VerifyCounts AnswerVerifier::TakeCounts() {
  absl::MutexLock lock(&mu_);
  holding_ = false;
  mu_.Await(absl::Condition(
      +[](AnswerVerifier* v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(v->mu_) {
        return v->queue_.empty() && !v->busy_;
      },
      this));
  holding_ = options_.after_run;
  held_bytes_ = 0;
  VerifyCounts counts = std::move(counts_);
  counts_ = VerifyCounts();
  return counts;
}

VerifyCounts AnswerVerifier::CountsSoFar() {
  absl::MutexLock lock(&mu_);
  return counts_;
}

void AnswerVerifier::WorkerLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    // Held checks wait for TakeCounts; the destructor drops them.
    mu_.Await(absl::Condition(
        +[](AnswerVerifier* v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(v->mu_) {
          return v->stopping_ || (!v->holding_ && !v->queue_.empty());
        },
        this));
    if (queue_.empty()) return;  // stopping, and nothing left
    TakeBatchLocked();
    busy_ = true;
    mu_.Unlock();
    RunChecks();
    // Their matrices are freed before the lock, not under it: Submit, on
    // gRPC's threads, waits for this low-priority thread's lock.
    batch_.clear();
    mu_.Lock();
    busy_ = false;
  }
}

void AnswerVerifier::TakeBatchLocked() {
  int frames = 0;
  while (!queue_.empty() && (batch_.empty() || frames + queue_.front()->frames <= kBatchFrames)) {
    frames += queue_.front()->frames;
    batch_.push_back(std::move(queue_.front()));  // a pointer: batch_ keeps its capacity
    queue_.pop_front();
  }
}

absl::Status AnswerVerifier::ParseAnswer(Check* check) const {
  v1::StreamScoreResponse parsed;
  GMM_RETURN_IF_ERROR(check->answer->Parse(&parsed));
  check->scores.assign(prepared_.size(), FloatMatrix());
  for (int m = 0; m < parsed.scores_size() && m < static_cast<int>(prepared_.size()); ++m) {
    absl::StatusOr<FloatMatrix> matrix = ScoresFromProto(parsed.scores(m));
    if (!matrix.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model ", m, "'s scores: ", matrix.status().message()));
    }
    check->scores[m] = *std::move(matrix);
  }
  // An answer carries every model's scores (the load asks for no fused-only
  // answers when it verifies): one without is wrong, not a check to skip.
  for (int m = 0; m < static_cast<int>(prepared_.size()); ++m) {
    if (prepared_[m] != nullptr && !HasScores(*check, m)) {
      return absl::InvalidArgumentError(absl::StrCat("no scores for model ", m));
    }
  }
  return absl::OkStatus();
}

bool AnswerVerifier::HasScores(const Check& check, int model) {
  return model < static_cast<int>(check.scores.size()) && check.scores[model].rows() > 0;
}

std::vector<const AnswerVerifier::Check*> AnswerVerifier::ParseBatch() {
  std::vector<const Check*> parsed;
  for (const std::unique_ptr<Check>& check : batch_) {
    if (check->answer.has_value()) {
      const absl::Status status = ParseAnswer(check.get());
      check->answer.reset();
      if (!status.ok()) {
        Count(*check, "", false, 0, "the answer is wrong: " + status.ToString());
        continue;
      }
    }
    parsed.push_back(check.get());
  }
  return parsed;
}

FloatMatrix AnswerVerifier::FramesOf(const std::vector<const Check*>& checks) const {
  int64_t total = 0;
  for (const Check* check : checks) total += check->frames;
  FloatMatrix frames(total, features_->dim());
  int64_t row = 0;
  for (const Check* check : checks) {
    const FloatMatrix chunk =
        features_->ChunkMatrix(check->stream, check->first_frame, check->frames);
    std::copy(chunk.span().begin(), chunk.span().end(), frames.row(row));
    row += check->frames;
  }
  return frames;
}

void AnswerVerifier::RunChecks() {
  const std::vector<const Check*> parsed = ParseBatch();
  const FloatMatrix frames = FramesOf(parsed);
  for (int m = 0; m < static_cast<int>(prepared_.size()); ++m) {
    if (prepared_[m] == nullptr) continue;
    auto sent = [m](const Check* check) { return HasScores(*check, m); };
    if (std::none_of(parsed.begin(), parsed.end(), sent)) continue;
    CheckModel(m, parsed, frames);
  }
}

void AnswerVerifier::CheckModel(int m, const std::vector<const Check*>& checks,
                                const FloatMatrix& frames) {
  const std::string model = absl::StrCat("model ", m, ", ");
  ScoreResult offline;
  const absl::Status status =
      backend_->Score(*prepared_[m], frames.view(), {.frame_totals = false}, &offline);
  int64_t row = 0;
  for (const Check* check : checks) {
    const int64_t first = row;
    row += check->frames;
    if (!HasScores(*check, m)) continue;
    if (!status.ok()) {
      Count(*check, model, false, 0, "offline scoring failed: " + status.ToString());
      continue;
    }
    FloatMatrix want(check->frames, offline.loglikes.cols());
    std::copy(offline.loglikes.row(first), offline.loglikes.row(first) + want.span().size(),
              want.data());
    double max_error = 0;
    std::string where;
    const bool agree = MatricesAgree(check->scores[m], want, options_.tolerance, &max_error,
                                     &where, options_.half_precision);
    Count(*check, model, agree, max_error, where);
  }
}

void AnswerVerifier::Count(const Check& check, const std::string& model, bool agree,
                           double max_error, const std::string& where) {
  absl::MutexLock lock(&mu_);
  ++counts_.checked;
  counts_.max_error = std::max(counts_.max_error, max_error);
  if (!agree && counts_.mismatched++ == 0) {
    counts_.first_mismatch = absl::StrFormat("stream %d, %sframes from %d: %s", check.stream,
                                             model, check.first_frame, where);
  }
}

}  // namespace gmmscore::load
