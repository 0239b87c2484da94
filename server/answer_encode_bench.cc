// answer_encode_bench: host CPU per StreamScore answer, by answer kind and
// by how it is written, for docs/PERFORMANCE.md (capacity issue 23):
//
//   answer_encode_bench --states 5000 --frames 10 --top_k 100 --answers 20000
//
// Each kind is encoded the two ways the daemon can:
//   message:  the answer's values filled into a StreamScoreResponse, which
//             protobuf then serialises (its repeated fields copied, then
//             written; state ids and offsets sized and written as varints);
//   encoder:  EncodeStreamAnswerTaking, the daemon's path, which writes the
//             values straight into the answer's bytes (server/answer_encoder.h).
// Kinds: top_k (states a backend selected, as a GPU returns them) and dense
// float32. Scores are random and the same for both ways; each way's bytes are
// checked equal before timing. Reports the median of --rounds rounds of
// --answers answers, in microseconds an answer, on one thread.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/clock.h"
#include "kernels/score/state_selection.h"
#include "server/answer_encoder.h"

ABSL_FLAG(int, states, 5000, "states of the model");
ABSL_FLAG(int, frames, 10, "frames an answer (a chunk)");
ABSL_FLAG(int, top_k, 100, "states kept a frame in top_k answers");
ABSL_FLAG(int, answers, 20000, "answers a round");
ABSL_FLAG(int, rounds, 5, "rounds a measurement (median reported)");

namespace gmmscore {
namespace {

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return {};
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes;
}

// The answer as a message, serialised by protobuf straight into the
// answer's slice (the encoder given no values to place: what the daemon did
// for top_k answers before the encoder wrote them).
grpc::ByteBuffer ByMessage(const ScoringPlan& plan, const std::vector<ScoreResult>& results) {
  v1::StreamScoreResponse response;
  response.set_first_frame(1000);
  if (!FillAnswer(plan, results, nullptr, &response).ok()) return {};
  const std::vector<internal::DeferredValues> none(results.size());
  absl::StatusOr<grpc::ByteBuffer> bytes = EncodeWithValues(response, none);
  return bytes.ok() ? *std::move(bytes) : grpc::ByteBuffer();
}

grpc::ByteBuffer ByEncoder(const ScoringPlan& plan, std::vector<ScoreResult> results) {
  absl::StatusOr<grpc::ByteBuffer> bytes =
      EncodeStreamAnswerTaking(plan, std::move(results), std::nullopt, {.first_frame = 1000});
  return bytes.ok() ? *std::move(bytes) : grpc::ByteBuffer();
}

// Median microseconds an answer of `encode` over the rounds. Each answer's
// results are copied first (the encoder takes them over, as the daemon's
// does); the copy is timed alone and subtracted.
template <typename Encode>
double MicrosPerAnswer(const std::vector<ScoreResult>& results, Encode encode) {
  const int answers = absl::GetFlag(FLAGS_answers);
  size_t bytes = 0;  // kept, so that the encoding is not optimised away
  auto round = [&](bool encoding) {
    const absl::Time start = absl::Now();
    for (int i = 0; i < answers; ++i) {
      std::vector<ScoreResult> copy = results;
      if (encoding) bytes += encode(std::move(copy)).Length();
    }
    return absl::ToDoubleMicroseconds(absl::Now() - start) / answers;
  };
  std::vector<double> times;
  for (int r = 0; r < absl::GetFlag(FLAGS_rounds); ++r) times.push_back(round(true) - round(false));
  std::sort(times.begin(), times.end());
  return bytes > 0 ? times[times.size() / 2] : -1.0;
}

int Run() {
  const int states = absl::GetFlag(FLAGS_states), frames = absl::GetFlag(FLAGS_frames);
  if (states < 1 || frames < 1 || absl::GetFlag(FLAGS_top_k) < 1 || absl::GetFlag(FLAGS_answers) < 1 ||
      absl::GetFlag(FLAGS_rounds) < 1) {
    std::fprintf(stderr, "answer_encode_bench: --states, --frames, --top_k, --answers and --rounds must be >= 1\n");
    return 2;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> value(-60.0f, 25.0f);
  ScoringPlan plan;
  auto model = std::make_shared<ServedModel>();
  model->name = "big";
  plan.models.push_back(model);
  plan.num_states = states;
  std::vector<ScoreResult> dense(1);
  dense[0].loglikes = FloatMatrix(frames, states);
  for (int64_t i = 0; i < int64_t{frames} * states; ++i) dense[0].loglikes.data()[i] = value(rng);
  std::vector<ScoreResult> selected(1);
  ScoringPlan topk_plan = plan;
  topk_plan.sparse.top_k = absl::GetFlag(FLAGS_top_k);
  selected[0].sparse = SelectStates(dense[0].loglikes.view(), topk_plan.sparse);

  std::printf("answer_encode_bench: %d frames x %d states, top_k %d; us an answer (median of %d rounds of %d)\n",
              frames, states, topk_plan.sparse.top_k, absl::GetFlag(FLAGS_rounds), absl::GetFlag(FLAGS_answers));
  std::printf("%-8s %10s %10s %10s %8s\n", "kind", "bytes", "message", "encoder", "ratio");
  struct Kind {
    const char* name;
    const ScoringPlan* plan;
    const std::vector<ScoreResult>* results;
  };
  for (const Kind& kind : {Kind{"top_k", &topk_plan, &selected}, Kind{"dense", &plan, &dense}}) {
    const std::string expected = BytesOf(ByMessage(*kind.plan, *kind.results));
    if (expected.empty() || BytesOf(ByEncoder(*kind.plan, *kind.results)) != expected) {
      std::fprintf(stderr, "%s: the encoder's bytes differ from the message's\n", kind.name);
      return 1;
    }
    const double message = MicrosPerAnswer(
        *kind.results, [&](std::vector<ScoreResult> r) { return ByMessage(*kind.plan, r); });
    const double encoder = MicrosPerAnswer(
        *kind.results, [&](std::vector<ScoreResult> r) { return ByEncoder(*kind.plan, std::move(r)); });
    std::printf("%-8s %10zu %10.2f %10.2f %7.2fx\n", kind.name, expected.size(), message, encoder,
                message / encoder);
  }
  return 0;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("host CPU per StreamScore answer: protobuf message against the encoder");
  absl::ParseCommandLine(argc, argv);
  return gmmscore::Run();
}
