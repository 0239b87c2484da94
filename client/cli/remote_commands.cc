#include "client/adaptation_config.h"
#include "client/cli/remote_commands.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/cli/common_flags.h"
#include "client/cli/connection_flags.h"
#include "client/cli/stream_summary.h"
#include "client/client.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_specifier.h"

// Shared with `gmmscore score`, which defines it (offline_commands.cc).
ABSL_DECLARE_FLAG(std::string, features);

ABSL_FLAG(std::string, server, "localhost:50051", "gmmscored address, HOST:PORT");
ABSL_FLAG(int, chunk_frames, 10,
          "frames per chunk sent (10 = 100 ms at a 10 ms frame shift, a live decoder's window)");
ABSL_FLAG(std::string, fusion, "max",
          "with several models: max, logsumexp (fixed --weights) or posterior (running model "
          "posteriors over --window_frames)");
ABSL_FLAG(std::string, weights, "",
          "comma-separated positive weights, one per --model (logsumexp: mixture weights; "
          "posterior: priors); empty = uniform");
ABSL_FLAG(int, window_frames, 50, "posterior fusion: sliding window length in frames");
ABSL_FLAG(double, acoustic_scale, 1.0,
          "posterior fusion: scale on frame log-likelihoods before they become posteriors");
ABSL_FLAG(std::string, transforms, "",
          "optional rspecifier of per-utterance D x (D+1) fMLLR transforms (Kaldi matrix "
          "archive keyed by utterance), applied by the server before scoring");
ABSL_FLAG(std::string, adaptation, "none",
          "live adaptation of each stream by the server: none, fmllr or map (MAP means), from "
          "the first model's own posteriors; each utterance's latest update is published under "
          "its key (fetch it with `gmmscore adaptation`)");
ABSL_FLAG(int64_t, adaptation_start_frames, 300, "adaptation: first update after these frames");
ABSL_FLAG(int64_t, adaptation_every_frames, 500, "adaptation: then one every these frames");
ABSL_DECLARE_FLAG(std::string, name);  // admin_commands.cc; `adaptation` uses it too
ABSL_FLAG(double, frame_shift_ms, 10.0, "frame shift, for audio time and the real-time factor");
ABSL_FLAG(bool, summary, true,
          "print a readable summary per utterance (frames, real-time factor, best states over "
          "time, dominant model) and in total, on stderr");

namespace gmmscore::cli {
namespace {

absl::Status AsUsage(const absl::Status& status) {
  return status.ok() ? status : UsageError(status.message());
}

absl::StatusOr<std::unique_ptr<Client>> ConnectToServer() {
  const std::string server = absl::GetFlag(FLAGS_server);
  GMM_ASSIGN_OR_RETURN(ClientOptions options, ClientOptionsFromFlags());
  return Client::Connect(server, options);
}

std::vector<std::string> WithConnectionFlags(std::vector<std::string> names) {
  for (std::string& name : ConnectionFlagNames()) names.push_back(std::move(name));
  return names;
}

// ---------------------------------------------------------------------------
// models

absl::Status RunModels(const SpecifiedFlags&) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, ConnectToServer());
  GMM_ASSIGN_OR_RETURN(std::vector<v1::ModelInfo> models, client->ListModels());
  std::string out = absl::StrFormat("%-24s %5s %7s %10s %8s %10s %10s\n", "NAME", "DIM", "STATES",
                                    "GAUSSIANS", "DEVICE", "HOST_MIB", "DEVICE_MIB");
  for (const v1::ModelInfo& m : models) {
    absl::StrAppendFormat(&out, "%-24s %5d %7d %10d %8s %10.1f %10.1f\n", m.name(), m.dim(),
                          m.num_states(), m.num_gaussians(), m.device(), m.bytes() / 1048576.0,
                          m.device_bytes() / 1048576.0);
  }
  std::fputs(out.c_str(), stdout);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// stream

// The parts of the StreamConfig every utterance shares, from the flags.
absl::StatusOr<v1::StreamConfig> ConfigFromFlags() {
  v1::StreamConfig config;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_model), ',', absl::SkipWhitespace())) {
    config.add_models(std::string(absl::StripAsciiWhitespace(name)));
  }
  if (config.models().empty()) return UsageError("--model names no model");
  const std::string fusion = absl::GetFlag(FLAGS_fusion);
  v1::FusionOptions* options = config.mutable_fusion();
  if (fusion == "max") {
    options->set_method(v1::FUSION_METHOD_MAX);
  } else if (fusion == "logsumexp") {
    options->set_method(v1::FUSION_METHOD_LOG_SUM_EXP);
  } else if (fusion == "posterior") {
    options->set_method(v1::FUSION_METHOD_POSTERIOR);
  } else {
    return UsageError(absl::StrCat("unknown --fusion '", fusion,
                                   "' (expected max, logsumexp or posterior)"));
  }
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_weights), ',', absl::SkipWhitespace())) {
    float weight;
    if (!absl::SimpleAtof(text, &weight)) {
      return UsageError(absl::StrCat("--weights: '", text, "' is not a number"));
    }
    options->add_weights(weight);
  }
  if (absl::GetFlag(FLAGS_window_frames) < 1) return UsageError("--window_frames must be >= 1");
  options->set_window_frames(absl::GetFlag(FLAGS_window_frames));
  options->set_acoustic_scale(static_cast<float>(absl::GetFlag(FLAGS_acoustic_scale)));
  // Only the fused (or single) matrix is written.
  config.mutable_output()->set_fused_only(true);
  absl::StatusOr<std::optional<v1::AdaptationConfig>> adaptation =
      AdaptationConfigFor(absl::GetFlag(FLAGS_adaptation), absl::GetFlag(FLAGS_adaptation_start_frames),
                          absl::GetFlag(FLAGS_adaptation_every_frames));
  if (!adaptation.ok()) return UsageError(std::string(adaptation.status().message()));
  if (adaptation->has_value()) {
    *config.mutable_adaptation() = **adaptation;
    // The adaptation needs the first model's own scores.
    config.mutable_output()->set_fused_only(false);
  }
  return config;
}

absl::StatusOr<std::map<std::string, FloatMatrix>> ReadTransforms() {
  std::map<std::string, FloatMatrix> transforms;
  const std::string rspecifier = absl::GetFlag(FLAGS_transforms);
  if (rspecifier.empty()) return transforms;
  GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> entries, ReadKaldiMatrixArchive(rspecifier));
  for (KaldiMatrixEntry& entry : entries) transforms[entry.key] = std::move(entry.matrix);
  return transforms;
}

struct StreamedUtterance {
  FloatMatrix scores;                        // T x S
  std::vector<std::string> dominant_models;  // per chunk, with fusion
  std::optional<v1::AdaptationReport> adaptation;  // the last answer's
};

// Streams one utterance in chunks of `chunk_frames` and collects its answers.
absl::StatusOr<StreamedUtterance> StreamUtterance(Client& client, const v1::StreamConfig& config,
                                                  ConstMatrixView features, int chunk_frames) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<StreamSession> session, client.StartStream(config));
  // Answers are received by the session's own thread, so pushing every chunk
  // first never waits for this thread to read.
  for (int64_t first = 0; first < features.rows; first += chunk_frames) {
    const int64_t count = std::min<int64_t>(chunk_frames, features.rows - first);
    GMM_RETURN_IF_ERROR(session->Push(features.Rows(first, count)));
  }
  GMM_RETURN_IF_ERROR(session->CloseSend());
  StreamedUtterance out;
  int64_t next = 0;
  while (next < features.rows) {
    GMM_ASSIGN_OR_RETURN(StreamAnswer answer, session->Next());
    if (answer.first_frame != next) {
      return absl::InternalError(absl::StrFormat("answer for frame %d arrived when %d was due",
                                                 answer.first_frame, next));
    }
    if (out.scores.empty()) out.scores.Resize(features.rows, answer.scores.cols());
    std::copy(answer.scores.data(), answer.scores.data() + answer.scores.rows() * answer.scores.cols(),
              out.scores.row(next));
    if (!answer.dominant_model.empty()) out.dominant_models.push_back(answer.dominant_model);
    if (answer.adaptation.has_value()) out.adaptation = answer.adaptation;
    next += answer.scores.rows();
  }
  GMM_RETURN_IF_ERROR(session->Finish());
  return out;
}

absl::Status RunStream(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "features", "output"}, "stream"));
  const std::string rspecifier = absl::GetFlag(FLAGS_features);
  const std::string wspecifier = absl::GetFlag(FLAGS_output);
  const int chunk_frames = absl::GetFlag(FLAGS_chunk_frames);
  if (chunk_frames < 1) return UsageError("--chunk_frames must be >= 1");
  GMM_ASSIGN_OR_RETURN(v1::StreamConfig base_config, ConfigFromFlags());
  GMM_RETURN_IF_ERROR(AsUsage(ParseArchiveRspecifier(rspecifier).status()));
  absl::StatusOr<ArchiveSpecifier> output = ParseArchiveWspecifier(wspecifier);
  GMM_RETURN_IF_ERROR(AsUsage(output.status()));
  GMM_ASSIGN_OR_RETURN(auto transforms, ReadTransforms());

  GMM_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, ConnectToServer());
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveReader> reader,
                       KaldiMatrixArchiveReader::Open(rspecifier));
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveWriter> writer,
                       KaldiMatrixArchiveWriter::Open(wspecifier));
  StreamSummary summary(absl::GetFlag(FLAGS_frame_shift_ms) / 1000.0, /*window_frames=*/25);
  const bool print_summary = absl::GetFlag(FLAGS_summary);

  absl::Status status;
  while (status.ok()) {
    absl::StatusOr<bool> more = reader->Next();
    if (!more.ok()) status = more.status();
    if (!status.ok() || !*more) break;
    const std::string& key = reader->key();
    v1::StreamConfig config = base_config;
    config.set_stream_id(key);
    if (config.has_adaptation()) config.mutable_adaptation()->set_save_as(key);
    if (!transforms.empty()) {
      auto it = transforms.find(key);
      if (it == transforms.end()) {
        status = absl::NotFoundError(absl::StrCat("no transform for utterance '", key, "' in ",
                                                  absl::GetFlag(FLAGS_transforms)));
        break;
      }
      config.mutable_transform()->set_rows(it->second.rows());
      config.mutable_transform()->set_cols(it->second.cols());
      config.mutable_transform()->mutable_values()->Add(it->second.span().begin(),
                                                        it->second.span().end());
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<StreamedUtterance> streamed =
        StreamUtterance(*client, config, reader->matrix().view(), chunk_frames);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!streamed.ok()) {
      status = PrefixStatus(absl::StrCat("utterance '", key, "'"), streamed.status());
      break;
    }
    status = writer->Write(key, streamed->scores.view());
    const std::string lines =
        summary.AddUtterance(key, streamed->scores, streamed->dominant_models, seconds);
    if (print_summary) std::fputs(lines.c_str(), stderr);
    if (print_summary && streamed->adaptation.has_value()) {
      const v1::AdaptationReport& a = *streamed->adaptation;
      std::fprintf(stderr,
                   "  %s: last chunk scored by adaptation v%llu (%s, from %llu frames, gain %.3f "
                   "nats/frame)%s%s\n",
                   key.c_str(), static_cast<unsigned long long>(a.version()), a.mode().c_str(),
                   static_cast<unsigned long long>(a.frames()), a.gain_per_frame(),
                   a.last_error().empty() ? "" : "; last error: ", a.last_error().c_str());
    }
  }
  const absl::Status closed = writer->Close();
  if (status.ok()) status = closed;
  if (!status.ok()) {
    // A partial archive would look like a complete one to the next tool.
    if (output->path != "-") std::remove(output->path.c_str());
    return status;
  }
  if (print_summary) {
    std::fprintf(stderr, "gmmscore stream: %s", summary.TotalReport().c_str());
  }
  return absl::OkStatus();
}

absl::Status RunAdaptation(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"name"}, "adaptation"));
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, ConnectToServer());
  const std::string name = absl::GetFlag(FLAGS_name);
  GMM_ASSIGN_OR_RETURN(v1::GetAdaptationResponse got, client->GetAdaptation(name));
  const v1::AdaptationReport& r = got.report();
  std::printf("%s: %s v%llu from %llu frames, count %.1f, gain %.4f nats/frame, mode %s%s%s\n",
              name.c_str(), got.method() == v1::AdaptationConfig::FMLLR ? "fmllr" : "map",
              static_cast<unsigned long long>(r.version()),
              static_cast<unsigned long long>(r.frames()), r.count(), r.gain_per_frame(),
              r.mode().c_str(), got.model().empty() ? "" : ", served as ", got.model().c_str());
  const std::string wspecifier = absl::GetFlag(FLAGS_output);
  if (wspecifier.empty()) return absl::OkStatus();
  if (!got.has_transform()) {
    return UsageError(absl::StrCat("'", name, "' is a MAP model (served as '", got.model(),
                                   "'), not a transform; --output has nothing to write"));
  }
  const v1::AffineTransform& w = got.transform();
  FloatMatrix matrix(w.rows(), w.cols());
  std::copy(w.values().begin(), w.values().end(), matrix.data());
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveWriter> writer,
                       KaldiMatrixArchiveWriter::Open(wspecifier));
  GMM_RETURN_IF_ERROR(writer->Write(name, matrix.view()));
  return writer->Close();
}

}  // namespace

std::vector<Command> RemoteCommands() {
  return {
      {"stream", "stream a feature archive through a gmmscored; write its log-likelihoods",
       "gmmscore stream --server HOST:PORT --model NAME[,NAME...] --features ark:FEATS\n"
       "                --output ark[,t]:OUT [--chunk_frames 10]\n"
       "                [--fusion max|logsumexp|posterior] [--weights W,...]\n"
       "                [--window_frames 50] [--acoustic_scale 1] [--transforms ark:TRANS]\n"
       "                [--adaptation none|fmllr|map] [--adaptation_start_frames 300]\n"
       "                [--adaptation_every_frames 500]\n\n"
       "Here --model names models the server serves (see `gmmscore models`), not files. Each\n"
       "utterance of FEATS becomes one StreamScore stream, sent in chunks of --chunk_frames as\n"
       "a live decoder would; the answers (the fused matrix when several models are named,\n"
       "else the model's) are written under the utterance's key as a frames x states archive,\n"
       "like `gmmscore score`. A summary (frames, real-time factor, best states over time,\n"
       "dominant model) goes to stderr unless --nosummary. With --adaptation the server adapts\n"
       "each stream live from its own speech (docs/TRAINING.md) and publishes each update\n"
       "under the utterance's key.",
       WithConnectionFlags({"server", "model", "features", "output", "chunk_frames", "fusion",
                            "weights", "window_frames", "acoustic_scale", "transforms",
                            "adaptation", "adaptation_start_frames", "adaptation_every_frames",
                            "frame_shift_ms", "summary"}),
       RunStream},
      {"adaptation", "fetch an adaptation a gmmscored published (GetAdaptation)",
       "gmmscore adaptation --server HOST:PORT --name NAME [--output ark[,t]:TRANS]\n\n"
       "Prints the latest update published under NAME (AdaptationConfig.save_as; `gmmscore\n"
       "stream --adaptation` publishes under each utterance's key): method, version, frames,\n"
       "count, gain and mode. An fMLLR transform is written to --output as a Kaldi matrix under\n"
       "NAME, ready for `gmmscore score --fmllr` or `stream --transforms`; a MAP model is\n"
       "served under NAME (stream with --model NAME).",
       WithConnectionFlags({"server", "name", "output"}),
       RunAdaptation},
      {"models", "list the models a gmmscored serves",
       "gmmscore models [--server HOST:PORT]\n\n"
       "One line per model: name, dimension, states, Gaussians, device, host and device MiB.",
       WithConnectionFlags({"server"}),
       RunModels},
  };
}

}  // namespace gmmscore::cli
