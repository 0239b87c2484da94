#include "client/cli/remote_align.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli/common_flags.h"
#include "client/cli/ctm_output.h"
#include "client/cli/connection_flags.h"
#include "client/client.h"
#include "kernels/core/status_macros.h"
#include "kernels/hmm/alignment.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/kaldi_text_table.h"
#include "kernels/io/transcripts.h"
#include "kernels/io/wav_reader.h"
#include "proto/wire_convert.h"

// Defined with the commands they belong to (align_commands.cc, remote_commands.cc).
ABSL_DECLARE_FLAG(std::string, transcripts);
ABSL_DECLARE_FLAG(std::string, audio);
ABSL_DECLARE_FLAG(bool, phones);
ABSL_DECLARE_FLAG(std::string, server);

ABSL_FLAG(int, requests_in_flight, 8,
          "align --server: utterances sent at once (the server aligns those that wait together as one "
          "batch)");
ABSL_FLAG(int, sample_rate, 16000,
          "align --server --audio and stream --audio: the sample rate of raw PCM16 files (WAV files carry "
          "their own); "
          "it must be the model's");

namespace gmmscore::cli {
namespace {

// What one utterance sends: features, or audio read when it is sent.
struct Input {
  const FloatMatrix* features = nullptr;
  std::string audio_path;
};

// The transcript's utterances that have input, keyed by utterance id.
struct Inputs {
  std::map<std::string, FloatMatrix> features;  // --features
  std::map<std::string, std::string> audio;     // --audio: id -> path

  std::optional<Input> Find(const std::string& utterance) const {
    if (auto it = features.find(utterance); it != features.end()) return Input{.features = &it->second};
    if (auto it = audio.find(utterance); it != audio.end()) return Input{.audio_path = it->second};
    return std::nullopt;
  }
};

absl::StatusOr<Inputs> ReadInputs() {
  Inputs inputs;
  if (!absl::GetFlag(FLAGS_features).empty()) {
    GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> entries, ReadKaldiMatrixTable(absl::GetFlag(FLAGS_features)));
    for (KaldiMatrixEntry& e : entries) inputs.features[e.key] = std::move(e.matrix);
    return inputs;
  }
  std::string scp = absl::GetFlag(FLAGS_audio);
  if (!absl::StrContains(scp, ':')) scp = "ark,t:" + scp;
  GMM_ASSIGN_OR_RETURN(inputs.audio, ReadKaldiTokenTable(scp));
  return inputs;
}

absl::StatusOr<v1::AlignRequest> MakeRequest(const std::string& model, const Transcript& transcript,
                                             const Input& input) {
  v1::AlignRequest request;
  request.set_model(model);
  request.set_utterance_id(transcript.utterance);
  for (const std::string& word : transcript.words) request.add_words(word);
  request.set_phones(absl::GetFlag(FLAGS_phones));
  if (input.features != nullptr) {
    FeaturesToProto(input.features->view(), request.mutable_features());
  } else {
    GMM_ASSIGN_OR_RETURN(const PcmAudio audio, ReadSpeechFile(input.audio_path, absl::GetFlag(FLAGS_sample_rate)));
    PcmToProto(audio.samples, audio.sample_rate, request.mutable_audio());
  }
  return request;
}

// The engine's alignment of an answer, for its CTM writers.
Alignment AlignmentOf(const v1::AlignResponse& response) {
  auto segments = [](const google::protobuf::RepeatedPtrField<v1::AlignSegment>& in) {
    std::vector<AlignedSegment> out;
    for (const v1::AlignSegment& s : in) {
      out.push_back({.label = s.label(), .word = s.word_index(), .first_frame = s.first_frame(),
                     .num_frames = s.num_frames()});
    }
    return out;
  };
  Alignment alignment;
  alignment.log_likelihood = response.log_likelihood();
  alignment.words = segments(response.words());
  alignment.phones = segments(response.phones());
  return alignment;
}

absl::Status CheckRemoteFlags(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "transcripts", "output"}, "align --server"));
  if (specified.contains("features") == specified.contains("audio")) {
    return UsageError("align needs exactly one of --features ark:F and --audio wav.scp");
  }
  for (const char* offline : {"dict", "frames", "backend"}) {
    if (specified.contains(offline)) {
      return UsageError(absl::StrCat("--", offline,
                                     " is for the offline align; with --server the server's model config names "
                                     "the dictionary and the server scores"));
    }
  }
  if (absl::GetFlag(FLAGS_requests_in_flight) < 1) return UsageError("--requests_in_flight must be >= 1");
  return absl::OkStatus();
}

absl::Status RunRemoteAlign(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(CheckRemoteFlags(specified));
  GMM_ASSIGN_OR_RETURN(const std::string ctm_path, CtmPath(absl::GetFlag(FLAGS_output)));
  GMM_ASSIGN_OR_RETURN(const std::vector<Transcript> transcripts, ReadTranscripts(absl::GetFlag(FLAGS_transcripts)));
  GMM_ASSIGN_OR_RETURN(const Inputs inputs, ReadInputs());
  GMM_ASSIGN_OR_RETURN(const ClientOptions options, ClientOptionsFromFlags());
  const std::string server = absl::GetFlag(FLAGS_server);
  GMM_ASSIGN_OR_RETURN(const std::unique_ptr<Client> client, Client::Connect(server, options));
  const std::string model = absl::GetFlag(FLAGS_model);

  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<v1::AlignResponse>> answers(transcripts.size(), absl::InternalError("not sent"));
  std::atomic<size_t> next{0};
  auto send = [&] {
    for (size_t u = next++; u < transcripts.size(); u = next++) {
      const std::optional<Input> input = inputs.Find(transcripts[u].utterance);
      if (!input.has_value()) {
        answers[u] = absl::NotFoundError("no features or audio for it");
        continue;
      }
      absl::StatusOr<v1::AlignRequest> request = MakeRequest(model, transcripts[u], *input);
      answers[u] = request.ok() ? client->Align(*request) : request.status();
    }
  };
  const int senders = std::min<int>(absl::GetFlag(FLAGS_requests_in_flight), static_cast<int>(transcripts.size()));
  std::vector<std::thread> threads;
  for (int i = 0; i < senders; ++i) threads.emplace_back(send);
  for (std::thread& thread : threads) thread.join();

  std::string ctm;
  int aligned = 0, failed = 0;
  double speech = 0;
  for (size_t u = 0; u < transcripts.size(); ++u) {
    const std::string& utterance = transcripts[u].utterance;
    if (!answers[u].ok()) {
      ++failed;
      std::fprintf(stderr, "gmmscore: error: utterance '%s': %s\n", utterance.c_str(),
                   std::string(answers[u].status().message()).c_str());
      continue;
    }
    ++aligned;
    const v1::AlignResponse& answer = *answers[u];
    speech += answer.num_frames() * answer.frame_seconds();
    ctm += absl::GetFlag(FLAGS_phones) ? PhoneCtm(utterance, AlignmentOf(answer), answer.frame_seconds())
                                       : WordCtm(utterance, AlignmentOf(answer), answer.frame_seconds());
  }
  GMM_RETURN_IF_ERROR(WriteCtm(ctm_path, ctm));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "gmmscore: aligned %d of %d utterances, %.1f s of speech in %.2f s (%.0fx real time, %s)\n",
               aligned, aligned + failed, speech, seconds, speech / std::max(seconds, 1e-9), server.c_str());
  if (failed == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(failed, " of ", aligned + failed, " utterances could not be aligned"));
}

}  // namespace

AlignRemoteMode RemoteAlignMode() {
  std::vector<std::string> flags = {"server", "requests_in_flight", "sample_rate"};
  for (std::string& name : ConnectionFlagNames()) flags.push_back(std::move(name));
  return {.flags = std::move(flags),
          .synopsis = "       gmmscore align --server HOST:PORT --model NAME --transcripts FILE\n"
                      "               (--features ark:F | --audio wav.scp) --output ctm:FILE\n"
                      "               [--phones] [--requests_in_flight N] [--sample_rate HZ] [--token_file F]\n"
                      "       (--server: the daemon aligns with its model NAME and the dictionary of its\n"
                      "       config; the same CTM as offline)\n",
          .run = RunRemoteAlign};
}

}  // namespace gmmscore::cli
