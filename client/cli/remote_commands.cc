#include "client/adaptation_config.h"
#include "client/cli/remote_commands.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
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
#include "client/fusion_method.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/kaldi_specifier.h"
#include "kernels/io/wav_reader.h"

// Shared with `gmmscore score`, which defines it (offline_commands.cc).
ABSL_DECLARE_FLAG(std::string, features);

ABSL_FLAG(std::string, server, "localhost:50051", "gmmscored address, HOST:PORT");
ABSL_DECLARE_FLAG(std::string, audio);  // align_commands.cc; `stream` takes speech files
ABSL_DECLARE_FLAG(int, sample_rate);    // remote_align.cc
ABSL_FLAG(double, audio_chunk_ms, 100, "stream --audio: milliseconds of audio per chunk");
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
  v1::FusionOptions* options = config.mutable_fusion();
  absl::StatusOr<v1::FusionMethod> method = FusionMethodFor(absl::GetFlag(FLAGS_fusion));
  if (!method.ok()) return UsageError(method.status().message());
  options->set_method(*method);
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
  GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> entries, ReadKaldiMatrixTable(rspecifier));
  for (KaldiMatrixEntry& entry : entries) transforms[entry.key] = std::move(entry.matrix);
  return transforms;
}

struct StreamedUtterance {
  FloatMatrix scores;                        // T x S
  std::vector<std::string> dominant_models;  // per chunk, with fusion
  std::optional<v1::AdaptationReport> adaptation;  // the last answer's
};

// Opens one stream, lets `send` push its chunks, half-closes and collects
// every answer until the stream ends.
absl::StatusOr<StreamedUtterance> StreamUtterance(Client& client, const v1::StreamConfig& config,
                                                  const std::function<absl::Status(StreamSession&)>& send) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<StreamSession> session, client.StartStream(config));
  // Answers are received by the session's own thread, so pushing every chunk
  // first never waits for this thread to read.
  GMM_RETURN_IF_ERROR(send(*session));
  GMM_RETURN_IF_ERROR(session->CloseSend());
  StreamedUtterance out;
  std::vector<float> scores;
  int64_t next = 0, states = 0;
  while (true) {
    absl::StatusOr<StreamAnswer> answer = session->Next();
    if (absl::IsOutOfRange(answer.status())) break;
    GMM_RETURN_IF_ERROR(answer.status());
    if (answer->first_frame != next) {
      return absl::InternalError(absl::StrFormat("answer for frame %d arrived when %d was due",
                                                 answer->first_frame, next));
    }
    states = answer->scores.cols();
    scores.insert(scores.end(), answer->scores.span().begin(), answer->scores.span().end());
    if (!answer->dominant_model.empty()) out.dominant_models.push_back(answer->dominant_model);
    if (answer->adaptation.has_value()) out.adaptation = answer->adaptation;
    next += answer->scores.rows();
  }
  GMM_RETURN_IF_ERROR(session->Finish());
  out.scores.Resize(next, states);
  std::copy(scores.begin(), scores.end(), out.scores.data());
  return out;
}

// Feature chunks of `chunk_frames`.
std::function<absl::Status(StreamSession&)> SendFeatures(ConstMatrixView features, int chunk_frames) {
  return [features, chunk_frames](StreamSession& session) {
    for (int64_t first = 0; first < features.rows; first += chunk_frames) {
      const int64_t count = std::min<int64_t>(chunk_frames, features.rows - first);
      GMM_RETURN_IF_ERROR(session.Push(features.Rows(first, count)));
    }
    return absl::OkStatus();
  };
}

// Audio chunks of `chunk_samples`.
std::function<absl::Status(StreamSession&)> SendAudio(const std::vector<int16_t>& samples, int64_t chunk_samples) {
  return [&samples, chunk_samples](StreamSession& session) {
    for (size_t first = 0; first < samples.size(); first += chunk_samples) {
      const size_t count = std::min<size_t>(chunk_samples, samples.size() - first);
      GMM_RETURN_IF_ERROR(session.PushAudio(absl::MakeConstSpan(samples).subspan(first, count)));
    }
    return absl::OkStatus();
  };
}

// One utterance to stream: features from an archive, or a speech file.
struct StreamInput {
  std::string key;
  FloatMatrix features;
  PcmAudio audio;
};

// The utterances of --features (an archive) or --audio (files), one at a time.
class StreamInputs {
 public:
  static absl::StatusOr<StreamInputs> Open(const SpecifiedFlags& specified) {
    StreamInputs inputs;
    if (specified.contains("audio")) {
      inputs.audio_files_ = absl::StrSplit(absl::GetFlag(FLAGS_audio), ',', absl::SkipEmpty());
      if (inputs.audio_files_.empty()) return UsageError("--audio names no file");
      return inputs;
    }
    GMM_ASSIGN_OR_RETURN(inputs.reader_, KaldiMatrixTableReader::Open(absl::GetFlag(FLAGS_features)));
    return inputs;
  }
  bool audio() const { return reader_ == nullptr; }
  // The next utterance, or nullopt after the last.
  absl::StatusOr<std::optional<StreamInput>> Next() {
    StreamInput input;
    if (audio()) {
      if (next_file_ == audio_files_.size()) return std::nullopt;
      const std::string& path = audio_files_[next_file_++];
      input.key = std::filesystem::path(path).stem().string();
      GMM_ASSIGN_OR_RETURN(input.audio, ReadSpeechFile(path, absl::GetFlag(FLAGS_sample_rate)));
      return input;
    }
    GMM_ASSIGN_OR_RETURN(const bool more, reader_->Next());
    if (!more) return std::nullopt;
    input.key = reader_->key();
    input.features = reader_->matrix();
    return input;
  }

 private:
  std::unique_ptr<KaldiMatrixTableReader> reader_;
  std::vector<std::string> audio_files_;
  size_t next_file_ = 0;
};

absl::Status RunStream(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "output"}, "stream"));
  if (specified.contains("features") == specified.contains("audio")) {
    return UsageError("stream needs exactly one of --features (an archive) and --audio (speech files)");
  }
  const std::string wspecifier = absl::GetFlag(FLAGS_output);
  const int chunk_frames = absl::GetFlag(FLAGS_chunk_frames);
  if (chunk_frames < 1) return UsageError("--chunk_frames must be >= 1");
  const double chunk_ms = absl::GetFlag(FLAGS_audio_chunk_ms);
  if (!(chunk_ms > 0)) return UsageError("--audio_chunk_ms must be > 0");
  GMM_ASSIGN_OR_RETURN(v1::StreamConfig base_config, ConfigFromFlags());
  if (specified.contains("features")) {
    GMM_RETURN_IF_ERROR(AsUsage(CheckTableRspecifier(absl::GetFlag(FLAGS_features))));
  }
  absl::StatusOr<ArchiveSpecifier> output = ParseArchiveWspecifier(wspecifier);
  GMM_RETURN_IF_ERROR(AsUsage(output.status()));
  GMM_ASSIGN_OR_RETURN(auto transforms, ReadTransforms());

  GMM_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, ConnectToServer());
  GMM_ASSIGN_OR_RETURN(StreamInputs inputs, StreamInputs::Open(specified));
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveWriter> writer,
                       KaldiMatrixArchiveWriter::Open(wspecifier));
  StreamSummary summary(absl::GetFlag(FLAGS_frame_shift_ms) / 1000.0, /*window_frames=*/25);
  const bool print_summary = absl::GetFlag(FLAGS_summary);

  absl::Status status;
  while (status.ok()) {
    absl::StatusOr<std::optional<StreamInput>> input = inputs.Next();
    if (!input.ok()) status = input.status();
    if (!status.ok() || !input->has_value()) break;
    const std::string& key = (*input)->key;
    v1::StreamConfig config = base_config;
    if (inputs.audio()) {
      config.mutable_audio()->set_encoding(v1::AudioStreamConfig::PCM16);
      config.mutable_audio()->set_sample_rate((*input)->audio.sample_rate);
    }
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
    const int64_t chunk_samples =
        std::max<int64_t>(1, std::llround(chunk_ms / 1000.0 * (*input)->audio.sample_rate));
    absl::StatusOr<StreamedUtterance> streamed = StreamUtterance(
        *client, config,
        inputs.audio() ? SendAudio((*input)->audio.samples, chunk_samples)
                       : SendFeatures((*input)->features.view(), chunk_frames));
    if (streamed.ok() && !inputs.audio() && streamed->scores.rows() != (*input)->features.rows()) {
      streamed = absl::InternalError(absl::StrFormat("the stream ended after %d of %d frames",
                                                     streamed->scores.rows(), (*input)->features.rows()));
    }
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
  std::vector<Command> commands = {
      {"stream", "stream a feature archive through a gmmscored; write its log-likelihoods",
       "gmmscore stream --server HOST:PORT --model NAME[,NAME...]\n"
       "                (--features ark:FEATS [--chunk_frames 10] | --audio SPEECH[,...] [--audio_chunk_ms 100])\n"
       "                --output ark[,t]:OUT\n"
       "                [--fusion max|logsumexp|posterior] [--weights W,...]\n"
       "                [--window_frames 50] [--acoustic_scale 1] [--transforms ark:TRANS]\n"
       "                [--adaptation none|fmllr|map] [--adaptation_start_frames 300]\n"
       "                [--adaptation_every_frames 500]\n\n"
       "Here --model names models the server serves (see `gmmscore models`), not files. Each\n"
       "utterance of FEATS becomes one StreamScore stream, sent in chunks of --chunk_frames as\n"
       "a live decoder would; the answers (the fused matrix when several models are named,\n"
       "else the model's) are written under the utterance's key as a frames x states archive,\n"
       "like `gmmscore score`. A summary (frames, real-time factor, best states over time,\n"
       "dominant model) goes to stderr unless --nosummary. With --audio each speech file (WAV\n"
       "or raw PCM16) becomes one audio stream, keyed by its name: the server runs the models'\n"
       "front end with live CMN (the features of `gmmscore features --cmn live`).\n"
       "With --adaptation the server adapts\n"
       "each stream live from its own speech (docs/TRAINING.md) and publishes each update\n"
       "under the utterance's key.",
       WithConnectionFlags({"server", "model", "features", "audio", "audio_chunk_ms", "sample_rate",
                            "output", "chunk_frames", "fusion",
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
  for (Command& command : commands) {
    if (command.name == "stream") {
      command.flag_help["model"] =
          "name(s) of models the server serves (see `gmmscore models`), comma-separated; not files";
    }
  }
  return commands;
}

}  // namespace gmmscore::cli
