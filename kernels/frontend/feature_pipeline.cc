// feat.params -> FeaturePipeline, and the checks that keep values sphinxbase
// cannot use away from it (sphinx_front_end.h).
#include <sys/stat.h>

#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/sphinx_features.h"

namespace gmmscore {
namespace {

absl::Status Bad(absl::string_view option, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("front end option -", option, ": ", problem));
}

double Mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double MelInverse(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

// sphinxbase's fe_build_melfilters places filter i between the mel points
// i, i+1, i+2 of nfilt+2 equally spaced ones (rounded to DFT bins with
// -round_filters), then walks the DFT bins in [left, right]. A filter whose
// edges round onto one bin divides by zero (NaN cepstra); one with no bin in
// [left, right] below nfft/2 makes it exit the process ("WTF" E_FATAL, found
// by fuzzing -lowerf 1 -upperf 6.5 -round_filters no). Both are refused here,
// unrounded edges with a margin for sphinxbase's float32 arithmetic.
absl::Status CheckFiltersResolvable(const FrontEndOptions& o) {
  const double bin = o.sample_rate / o.fft_size;
  const double low = Mel(o.lower_freq);
  const double width = (Mel(o.upper_freq) - low) / (o.num_filters + 1);
  auto edge = [&](int k) {
    const double hz = MelInverse(low + k * width);
    return o.round_filters ? std::floor(hz / bin + 0.5) * bin : hz;
  };
  const double margin = o.round_filters ? 0.0 : 1e-3 * bin;
  for (int i = 0; i < o.num_filters; ++i) {
    const double left = edge(i), centre = edge(i + 1), right = edge(i + 2);
    const double first_bin = std::ceil((left + margin) / bin);
    const bool has_bin = first_bin * bin <= right - margin && first_bin < o.fft_size / 2;
    if (!(left < centre && centre < right) || !has_bin) {
      return Bad("nfilt", absl::StrCat(o.num_filters, " mel filters between ", o.lower_freq, " and ", o.upper_freq,
                                       " Hz are too narrow for the ", bin, " Hz DFT bins of a ", o.fft_size,
                                       "-point FFT (filter ", i, " holds no bin)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ParseBool(absl::string_view name, absl::string_view value) {
  const std::string v = absl::AsciiStrToLower(value);
  // The spellings sphinxbase's cmd_ln accepts.
  if (v == "yes" || v == "true" || v == "y" || v == "t" || v == "1") return true;
  if (v == "no" || v == "false" || v == "n" || v == "f" || v == "0") return false;
  return Bad(name, absl::StrCat("\"", value, "\" is not yes or no"));
}

// -cmninit: up to 13 comma-separated numbers, the rest zero (as
// pocketsphinx's cmn_set_repr reads it, but refusing what it would skip).
absl::StatusOr<std::vector<float>> ParseCmnInit(absl::string_view value) {
  std::vector<float> init(13, 0.0f);
  const std::vector<absl::string_view> parts = absl::StrSplit(value, ',');
  if (parts.size() > init.size()) {
    return Bad("cmninit", absl::StrCat("\"", value, "\" has ", parts.size(), " values; at most 13"));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    double v = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(parts[i]), &v) || !std::isfinite(v)) {
      return Bad("cmninit", absl::StrCat("\"", parts[i], "\" (value ", i + 1, ") is not a number"));
    }
    init[i] = static_cast<float>(v);
  }
  return init;
}

}  // namespace

bool operator==(const FrontEndOptions& a, const FrontEndOptions& b) {
  auto tie = [](const FrontEndOptions& o) {
    return std::tie(o.sample_rate, o.frame_rate, o.window_length, o.fft_size, o.num_filters, o.lower_freq,
                    o.upper_freq, o.num_cepstra, o.transform, o.lifter, o.pre_emphasis, o.remove_dc,
                    o.remove_noise, o.remove_silence, o.round_filters, o.unit_area);
  };
  return tie(a) == tie(b);
}

bool operator==(const FeaturePipeline& a, const FeaturePipeline& b) {
  return a.front_end == b.front_end && a.cmn == b.cmn && a.cmn_init == b.cmn_init &&
         a.feature_type == b.feature_type;
}

absl::Status ValidateFrontEndOptions(const FrontEndOptions& o) {
  if (!(o.sample_rate >= 1000.0 && o.sample_rate <= 384000.0)) {
    return Bad("samprate", absl::StrCat(o.sample_rate, " Hz is outside [1000, 384000]"));
  }
  // sphinxbase asserts (aborts) unless a frame shift is at least 2 samples.
  // sphinxbase also stores the frame rate as int16.
  if (o.frame_rate < 1 || o.frame_rate > 32767 || static_cast<int>(o.sample_rate / o.frame_rate + 0.5) < 2) {
    return Bad("frate", absl::StrCat(o.frame_rate, " frames/s does not fit ", o.sample_rate, " Hz audio"));
  }
  // fft_size is stored as int16 in sphinxbase.
  if (o.fft_size < 8 || o.fft_size > 16384 || (o.fft_size & (o.fft_size - 1)) != 0) {
    return Bad("nfft", absl::StrCat(o.fft_size, " is not a power of two in [8, 16384]"));
  }
  const double frame_samples = o.window_length * o.sample_rate;
  if (!(frame_samples >= 2.0 && frame_samples + 0.5 < o.fft_size + 1)) {
    return Bad("wlen", absl::StrCat(o.window_length, " s is ", frame_samples, " samples; it must be 2 to ",
                                    o.fft_size, " (-nfft)"));
  }
  if (!(o.lower_freq >= 0.0 && o.lower_freq < o.upper_freq)) {
    return Bad("lowerf", absl::StrCat(o.lower_freq, " Hz must be >= 0 and below -upperf ", o.upper_freq));
  }
  if (!(o.upper_freq <= o.sample_rate / 2)) {
    return Bad("upperf", absl::StrCat(o.upper_freq, " Hz is above half the sample rate (", o.sample_rate / 2, ")"));
  }
  if (o.num_filters < 1 || o.num_filters > o.fft_size / 2) {
    return Bad("nfilt", absl::StrCat(o.num_filters, " is outside [1, nfft/2 = ", o.fft_size / 2, "]"));
  }
  // num_cepstra is stored as uint8 in sphinxbase.
  if (o.num_cepstra < 1 || o.num_cepstra > o.num_filters || o.num_cepstra > 255) {
    return Bad("ncep", absl::StrCat(o.num_cepstra, " is outside [1, min(nfilt, 255)]"));
  }
  if (o.transform != "legacy" && o.transform != "dct" && o.transform != "htk") {
    return Bad("transform", absl::StrCat("\"", o.transform, "\" is not legacy, dct or htk"));
  }
  if (o.lifter < 0 || o.lifter > 10000) return Bad("lifter", absl::StrCat(o.lifter, " is outside [0, 10000]"));
  if (!(o.pre_emphasis >= 0.0 && o.pre_emphasis <= 1.0)) {
    return Bad("alpha", absl::StrCat(o.pre_emphasis, " is outside [0, 1]"));
  }
  return CheckFiltersResolvable(o);
}

absl::StatusOr<FeaturePipeline> FeaturePipelineFromFeatParams(const SphinxFeatParams& params,
                                                              const std::string& where) {
  FeaturePipeline pipeline;
  FrontEndOptions& o = pipeline.front_end;
  // Options sphinxbase has that would change the features in ways not done here.
  static const std::set<std::string> kUnsupported = {"lda", "ldadim", "logspec", "smoothspec", "warp_type",
                                                     "warp_params"};
  for (const auto& entry : params.values) {
    // Named references, not a structured binding: clang 14 cannot capture those.
    const std::string& name = entry.first;
    const std::string& value = entry.second;
    absl::Status status;
    auto number = [&](auto* out) {
      if (!absl::SimpleAtoi(value, out)) status = Bad(name, absl::StrCat("\"", value, "\" is not an integer"));
    };
    auto real = [&](double* out) {
      if (!absl::SimpleAtod(value, out) || !std::isfinite(*out)) {
        status = Bad(name, absl::StrCat("\"", value, "\" is not a number"));
      }
    };
    auto flag = [&](bool* out) {
      absl::StatusOr<bool> b = ParseBool(name, value);
      if (b.ok()) *out = *b; else status = b.status();
    };
    if (name == "samprate") real(&o.sample_rate);
    else if (name == "frate") number(&o.frame_rate);
    else if (name == "wlen") real(&o.window_length);
    else if (name == "nfft") number(&o.fft_size);
    else if (name == "nfilt") number(&o.num_filters);
    else if (name == "lowerf") real(&o.lower_freq);
    else if (name == "upperf") real(&o.upper_freq);
    else if (name == "ncep") number(&o.num_cepstra);
    else if (name == "transform") o.transform = value;
    else if (name == "lifter") number(&o.lifter);
    else if (name == "alpha") real(&o.pre_emphasis);
    else if (name == "remove_dc") flag(&o.remove_dc);
    else if (name == "remove_noise") flag(&o.remove_noise);
    else if (name == "round_filters") flag(&o.round_filters);
    else if (name == "unit_area") flag(&o.unit_area);
    else if (name == "feat") pipeline.feature_type = value;
    else if (name == "cmninit") {
      absl::StatusOr<std::vector<float>> init = ParseCmnInit(value);
      if (init.ok()) pipeline.cmn_init = *std::move(init); else status = init.status();
    } else if (name == "cmn") {
      if (value == "batch" || value == "current") pipeline.cmn = CmnMode::kBatch;
      else if (value == "live") pipeline.cmn = CmnMode::kLive;
      else if (value == "none") pipeline.cmn = CmnMode::kNone;
      else status = absl::UnimplementedError(absl::StrCat("-cmn ", value, " is not supported (batch, current, live or none)"));
    } else if (name == "agc" || name == "varnorm" || name == "doublebw") {
      if (value != "none" && value != "no") {
        status = absl::UnimplementedError(absl::StrCat("-", name, " ", value, " is not supported"));
      }
    } else if (kUnsupported.contains(name)) {
      status = absl::UnimplementedError(absl::StrCat("-", name, " is not supported"));
    }
    // Anything else is a decoder option or one fixed here (-dither,
    // -remove_silence; see the header): it does not describe the features.
    if (!status.ok()) return PrefixStatus(where, status);
  }
  if (o.num_cepstra != 13) {
    // sphinx_features.h defines the dynamic features on 13 cepstra.
    return absl::UnimplementedError(absl::StrCat(where, ": -ncep ", o.num_cepstra, " is not supported (13)"));
  }
  if (SphinxFeatureDim(pipeline.feature_type, o.num_cepstra) == 0) {
    return absl::UnimplementedError(absl::StrCat(where, ": -feat ", pipeline.feature_type,
                                                 " is not supported (1s_c, 1s_c_d, 1s_c_d_dd or s2_4x)"));
  }
  if (absl::Status status = ValidateFrontEndOptions(o); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", status.message()));
  }
  return pipeline;
}

absl::StatusOr<FeaturePipeline> FeaturePipelineForModel(const std::string& model_dir) {
  if (!LooksLikeSphinxModelDirectory(model_dir)) {
    return absl::NotFoundError(absl::StrCat("'", model_dir,
                                            "' is not a Sphinx model directory (no mdef and means; the front end "
                                            "is read from its feat.params)"));
  }
  const std::string path = model_dir + "/feat.params";
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return FeaturePipeline{};
  GMM_ASSIGN_OR_RETURN(const SphinxFeatParams params, ReadSphinxFeatParams(path));
  return FeaturePipelineFromFeatParams(params, absl::StrCat("feat.params '", path, "'"));
}

}  // namespace gmmscore
