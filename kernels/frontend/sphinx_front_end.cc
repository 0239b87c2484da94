// The sphinxbase calls of sphinx_front_end.h: options -> cmd_ln -> fe_t,
// samples -> cepstra.
#include "kernels/frontend/sphinx_front_end.h"

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "kernels/frontend/live_front_end.h"
#include "kernels/io/sphinx_features.h"

extern "C" {
#include <sphinxbase/cmd_ln.h>
#include <sphinxbase/err.h>
#include <sphinxbase/fe.h>
}

namespace gmmscore {

struct SphinxFeFree {
  void operator()(fe_t* fe) const { fe_free(fe); }
  using Ptr = std::unique_ptr<fe_t, SphinxFeFree>;
};

namespace {

static_assert(sizeof(mfcc_t) == sizeof(float), "sphinxbase built with FIXED_POINT is not supported");

// sphinxbase logs through one process-wide callback. Its INFO lines would flood a server's
// stderr, and its warnings and errors belong in the Status we return: the
// callback keeps warnings and errors for the calling thread, if it asked.
thread_local std::string* sphinx_messages = nullptr;

void SphinxLog(void* /*user_data*/, err_lvl_t level, const char* format, ...) {
  if (sphinx_messages == nullptr || level < ERR_WARN) return;
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  absl::StrAppend(sphinx_messages, sphinx_messages->empty() ? "" : "; ",
                  absl::StripTrailingAsciiWhitespace(buffer));
}

// Collects sphinxbase's messages on this thread for its lifetime.
class SphinxMessages {
 public:
  SphinxMessages() {
    static std::once_flag installed;
    std::call_once(installed, [] {
      // cmd_ln prints the whole configuration straight to the log file
      // handle, bypassing the callback: take the handle away first (this
      // only works while sphinxbase's own callback is installed).
      err_set_logfp(nullptr);
      err_set_callback(SphinxLog, nullptr);
    });
    sphinx_messages = &text_;
  }
  ~SphinxMessages() { sphinx_messages = nullptr; }
  SphinxMessages(const SphinxMessages&) = delete;
  SphinxMessages& operator=(const SphinxMessages&) = delete;
  std::string text() const { return text_.empty() ? "no message" : text_; }

 private:
  std::string text_;
};

struct CmdLnFree {
  void operator()(cmd_ln_t* config) const { cmd_ln_free_r(config); }
};
using FrontEndPtr = SphinxFeFree::Ptr;

// sphinxbase's arguments for `o`; every option is given, so no default of
// the installed sphinxbase version leaks in unnoticed.
std::vector<std::string> Arguments(const FrontEndOptions& o) {
  auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  return {"gmmscore",
          "-samprate", absl::StrFormat("%.9g", o.sample_rate),
          "-frate", absl::StrCat(o.frame_rate),
          "-wlen", absl::StrFormat("%.9g", o.window_length),
          "-nfft", absl::StrCat(o.fft_size),
          "-nfilt", absl::StrCat(o.num_filters),
          "-lowerf", absl::StrFormat("%.9g", o.lower_freq),
          "-upperf", absl::StrFormat("%.9g", o.upper_freq),
          "-ncep", absl::StrCat(o.num_cepstra),
          "-transform", o.transform,
          "-lifter", absl::StrCat(o.lifter),
          "-alpha", absl::StrFormat("%.9g", o.pre_emphasis),
          "-remove_dc", yes_no(o.remove_dc),
          "-remove_noise", yes_no(o.remove_noise),
          "-remove_silence", yes_no(o.remove_silence),
          "-round_filters", yes_no(o.round_filters),
          "-unit_area", yes_no(o.unit_area),
          "-dither", "no",
          "-doublebw", "no",
          "-logspec", "no",
          "-smoothspec", "no",
          "-input_endian", "little",
          "-verbose", "no",
          // sphinxbase holds frames back until its VAD has seen this many
          // speech frames, even with silence removal off, and drops them if
          // the audio ends first: with it off, release every frame at once.
          "-vad_startspeech", o.remove_silence ? "10" : "1"};
}

absl::StatusOr<FrontEndPtr> CreateFrontEnd(const FrontEndOptions& options,
                                                             SphinxMessages& messages) {
  std::vector<std::string> args = Arguments(options);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  std::unique_ptr<cmd_ln_t, CmdLnFree> config(
      cmd_ln_parse_r(nullptr, fe_get_args(), static_cast<int32>(argv.size()), argv.data(), /*strict=*/TRUE));
  if (config == nullptr) {
    return absl::InternalError(absl::StrCat("sphinxbase rejected the front end options: ", messages.text()));
  }
  // fe_init_auto_r takes its own reference to the configuration.
  FrontEndPtr fe(fe_init_auto_r(config.get()));
  if (fe == nullptr) {
    return absl::InternalError(absl::StrCat("sphinxbase could not build the front end: ", messages.text()));
  }
  return fe;
}

}  // namespace

struct CepstraStream::State {
  SphinxFeFree::Ptr fe;
  int width = 0;
  bool ended = false;
};

CepstraStream::CepstraStream(std::unique_ptr<State> state) : state_(std::move(state)) {}
CepstraStream::CepstraStream(CepstraStream&&) noexcept = default;
CepstraStream& CepstraStream::operator=(CepstraStream&&) noexcept = default;
CepstraStream::~CepstraStream() = default;

absl::StatusOr<CepstraStream> CepstraStream::Create(const FrontEndOptions& options) {
  GMM_RETURN_IF_ERROR(ValidateFrontEndOptions(options));
  SphinxMessages messages;
  auto state = std::make_unique<State>();
  GMM_ASSIGN_OR_RETURN(state->fe, CreateFrontEnd(options, messages));
  state->width = fe_get_output_size(state->fe.get());
  if (fe_start_utt(state->fe.get()) < 0) return absl::InternalError(absl::StrCat("fe_start_utt: ", messages.text()));
  return CepstraStream(std::move(state));
}

int CepstraStream::width() const { return state_->width; }

absl::StatusOr<FloatMatrix> CepstraStream::Process(absl::Span<const int16_t> samples) {
  if (state_->ended) return absl::FailedPreconditionError("the cepstra stream has ended");
  SphinxMessages messages;
  fe_t* fe = state_->fe.get();
  const int width = state_->width;
  // Frames come out in chunks; the VAD (when on) may hold some back and
  // release them later, so keep going until the input is used up. Samples
  // short of a frame stay in sphinxbase's overflow buffer for the next call.
  constexpr int kChunkFrames = 256;
  std::vector<float> chunk(static_cast<size_t>(kChunkFrames + 1) * width);
  std::vector<mfcc_t*> rows(kChunkFrames + 1);
  for (int i = 0; i <= kChunkFrames; ++i) rows[i] = chunk.data() + static_cast<size_t>(i) * width;
  std::vector<float> cepstra;
  const int16* next = samples.data();
  size_t left = samples.size();
  while (true) {
    int32 frames = kChunkFrames;
    const size_t left_before = left;
    if (fe_process_frames(fe, &next, &left, rows.data(), &frames, nullptr) < 0) {
      return absl::InternalError(absl::StrCat("fe_process_frames: ", messages.text()));
    }
    cepstra.insert(cepstra.end(), chunk.begin(), chunk.begin() + static_cast<size_t>(frames) * width);
    if (frames == 0 && (left == 0 || left == left_before)) break;
  }
  if (left != 0) {
    return absl::InternalError(absl::StrCat("fe_process_frames stopped with ", left, " samples unread"));
  }
  FloatMatrix out(static_cast<int64_t>(cepstra.size()) / width, width);
  std::copy(cepstra.begin(), cepstra.end(), out.data());
  return out;
}

absl::StatusOr<FloatMatrix> CepstraStream::End() {
  if (state_->ended) return absl::FailedPreconditionError("the cepstra stream has ended");
  state_->ended = true;
  SphinxMessages messages;
  FloatMatrix last(1, state_->width);
  int32 frames = 0;
  if (fe_end_utt(state_->fe.get(), last.row(0), &frames) < 0) {
    return absl::InternalError(absl::StrCat("fe_end_utt: ", messages.text()));
  }
  return frames == 0 ? FloatMatrix(0, state_->width) : last;
}

absl::StatusOr<FloatMatrix> ComputeCepstra(absl::Span<const int16_t> samples, const FrontEndOptions& options) {
  GMM_ASSIGN_OR_RETURN(CepstraStream stream, CepstraStream::Create(options));
  GMM_ASSIGN_OR_RETURN(FloatMatrix body, stream.Process(samples));
  GMM_ASSIGN_OR_RETURN(FloatMatrix tail, stream.End());
  FloatMatrix out(body.rows() + tail.rows(), stream.width());
  std::copy(body.span().begin(), body.span().end(), out.data());
  std::copy(tail.span().begin(), tail.span().end(), out.row(body.rows()));
  return out;
}

namespace {

// The whole recording through the path an audio stream takes.
absl::StatusOr<FloatMatrix> ComputeLiveFeatures(absl::Span<const int16_t> samples, const FeaturePipeline& pipeline) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<LiveFrontEnd> live, LiveFrontEnd::Create(pipeline));
  GMM_ASSIGN_OR_RETURN(FloatMatrix body, live->Push(samples));
  GMM_ASSIGN_OR_RETURN(FloatMatrix tail, live->Finish());
  FloatMatrix out(body.rows() + tail.rows(), live->dim());
  std::copy(body.span().begin(), body.span().end(), out.data());
  std::copy(tail.span().begin(), tail.span().end(), out.row(body.rows()));
  return out;
}

}  // namespace

absl::StatusOr<FloatMatrix> ComputeFeatures(const PcmAudio& audio, const FeaturePipeline& pipeline,
                                            const std::string& name) {
  if (audio.sample_rate != pipeline.front_end.sample_rate) {
    return absl::InvalidArgumentError(absl::StrCat("audio '", name, "' is sampled at ", audio.sample_rate,
                                                   " Hz but the model's front end expects ",
                                                   pipeline.front_end.sample_rate,
                                                   " Hz (feat.params -samprate); resample it first"));
  }
  if (pipeline.cmn == CmnMode::kLive) {
    absl::StatusOr<FloatMatrix> live = ComputeLiveFeatures(audio.samples, pipeline);
    if (!live.ok()) return PrefixStatus(absl::StrCat("audio '", name, "'"), live.status());
    return live;
  }
  absl::StatusOr<FloatMatrix> cepstra = ComputeCepstra(audio.samples, pipeline.front_end);
  if (!cepstra.ok()) {
    return PrefixStatus(absl::StrCat("audio '", name, "'"), cepstra.status());
  }
  if (pipeline.cmn == CmnMode::kBatch) ApplyBatchCmn(&*cepstra);
  absl::StatusOr<FloatMatrix> features = ComputeSphinxFeatures(*cepstra, pipeline.feature_type);
  if (!features.ok()) {
    return PrefixStatus(absl::StrCat("audio '", name, "'"), features.status());
  }
  return features;
}

}  // namespace gmmscore
