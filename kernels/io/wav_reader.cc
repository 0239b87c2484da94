#include "kernels/io/wav_reader.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/byte_reader.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

using io_internal::ByteReader;

constexpr uint16_t kFormatPcm = 1;
constexpr uint16_t kFormatExtensible = 0xFFFE;
// The first two bytes of KSDATAFORMAT_SUBTYPE_PCM's GUID; the other 14 are
// the fixed "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71".
constexpr char kPcmSubformatTail[] = "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71";

struct WavFormat {
  uint16_t tag = 0;
  uint16_t channels = 0;
  uint32_t sample_rate = 0;
  uint16_t block_align = 0;
  uint16_t bits = 0;
};

absl::StatusOr<WavFormat> ReadFmtChunk(ByteReader& in, uint32_t size) {
  const int64_t start = in.offset();
  if (size < 16) return in.Error(absl::StrCat("\"fmt \" chunk of ", size, " bytes (at least 16 expected)"));
  WavFormat format;
  GMM_ASSIGN_OR_RETURN(format.tag, in.Read<uint16_t>("the format tag"));
  GMM_ASSIGN_OR_RETURN(format.channels, in.Read<uint16_t>("the channel count"));
  GMM_ASSIGN_OR_RETURN(format.sample_rate, in.Read<uint32_t>("the sample rate"));
  GMM_RETURN_IF_ERROR(in.Skip(4, "the byte rate"));
  GMM_ASSIGN_OR_RETURN(format.block_align, in.Read<uint16_t>("the block alignment"));
  GMM_ASSIGN_OR_RETURN(format.bits, in.Read<uint16_t>("the bits per sample"));
  if (format.tag == kFormatExtensible) {
    // cbSize, valid bits, channel mask, then the 16-byte sub-format GUID.
    if (size < 40) return in.Error(absl::StrCat("WAVE_FORMAT_EXTENSIBLE \"fmt \" chunk of ", size, " bytes (40 expected)"));
    GMM_RETURN_IF_ERROR(in.Skip(8, "the extensible format fields"));
    GMM_ASSIGN_OR_RETURN(const uint16_t subformat, in.Read<uint16_t>("the sub-format"));
    GMM_ASSIGN_OR_RETURN(const absl::string_view tail, in.ReadBytes(14, "the sub-format GUID"));
    const bool pcm_guid = tail == absl::string_view(kPcmSubformatTail, 14);
    format.tag = pcm_guid ? subformat : 0xFFFF;
  }
  GMM_RETURN_IF_ERROR(in.Skip(start + size + (size & 1) - in.offset(), "the \"fmt \" chunk"));
  return format;
}

absl::Status CheckFormat(const WavFormat& format, const ByteReader& in) {
  if (format.tag != kFormatPcm) {
    const char* kind = format.tag == 3 ? "IEEE float" : format.tag == 6 ? "A-law" : format.tag == 7 ? "mu-law" : "non-PCM";
    return absl::UnimplementedError(absl::StrCat(in.what(), " holds ", kind, " audio (format tag ", format.tag,
                                                 "); only 16-bit PCM WAV is read: convert it, e.g. "
                                                 "`sox IN -b 16 -e signed -c 1 OUT.wav`"));
  }
  if (format.channels != 1 || format.bits != 16) {
    return absl::UnimplementedError(absl::StrCat(in.what(), " has ", format.channels, " channel(s) of ",
                                                 format.bits, "-bit samples; only mono 16-bit PCM is read: "
                                                 "convert it, e.g. `sox IN -b 16 -c 1 OUT.wav`"));
  }
  if (format.block_align != 2) {
    return absl::InvalidArgumentError(absl::StrCat(in.what(), ": block alignment ", format.block_align,
                                                   " does not match mono 16-bit samples (2)"));
  }
  if (format.sample_rate == 0 || format.sample_rate > 1'000'000) {
    return absl::InvalidArgumentError(absl::StrCat(in.what(), ": sample rate ", format.sample_rate, " Hz is not valid"));
  }
  return absl::OkStatus();
}

std::vector<int16_t> LittleEndianSamples(absl::string_view bytes) {
  std::vector<int16_t> samples(bytes.size() / 2);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i] = static_cast<int16_t>(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
  }
  return samples;
}

}  // namespace

absl::StatusOr<PcmAudio> DecodeWav(absl::string_view bytes, const std::string& name) {
  ByteReader in(bytes, absl::StrCat("WAV file '", name, "'"), /*big_endian=*/false);
  GMM_ASSIGN_OR_RETURN(const absl::string_view riff, in.ReadBytes(4, "the RIFF magic"));
  if (riff == "RIFX" || riff == "RF64") {
    return absl::UnimplementedError(absl::StrCat(in.what(), " is a ", riff,
                                                 " file; only little-endian RIFF WAV is read"));
  }
  if (riff != "RIFF") return in.ErrorAt(0, "no \"RIFF\" magic (not a WAV file)");
  GMM_RETURN_IF_ERROR(in.Skip(4, "the RIFF size"));
  GMM_ASSIGN_OR_RETURN(const absl::string_view wave, in.ReadBytes(4, "the WAVE magic"));
  if (wave != "WAVE") return in.ErrorAt(8, "RIFF file of type other than \"WAVE\"");

  bool have_format = false;
  WavFormat format;
  while (true) {
    if (in.at_end()) {
      return in.Error(have_format ? "no \"data\" chunk" : "no \"fmt \" chunk");
    }
    const int64_t chunk_at = in.offset();
    GMM_ASSIGN_OR_RETURN(const absl::string_view id, in.ReadBytes(4, "a chunk id"));
    GMM_ASSIGN_OR_RETURN(const uint32_t size, in.Read<uint32_t>("a chunk size"));
    if (id == "fmt ") {
      GMM_ASSIGN_OR_RETURN(format, ReadFmtChunk(in, size));
      GMM_RETURN_IF_ERROR(CheckFormat(format, in));
      have_format = true;
    } else if (id == "data") {
      if (!have_format) return in.ErrorAt(chunk_at, "\"data\" chunk before the \"fmt \" chunk");
      // Checked before the parity: streaming writers leave 0xFFFFFFFF here.
      if (size > in.remaining()) {
        return absl::DataLossError(absl::StrCat(in.what(), ": the \"data\" chunk at byte ", chunk_at, " declares ",
                                                size, " bytes but only ", in.remaining(),
                                                " follow (truncated?)"));
      }
      if (size % 2 != 0) return in.ErrorAt(chunk_at, absl::StrCat("\"data\" chunk of odd size ", size));
      GMM_ASSIGN_OR_RETURN(const absl::string_view data, in.ReadBytes(size, "the samples"));
      return PcmAudio{static_cast<int>(format.sample_rate), LittleEndianSamples(data)};
    } else {
      GMM_RETURN_IF_ERROR(in.Skip(static_cast<int64_t>(size) + (size & 1),
                                  absl::StrCat("the \"", absl::CHexEscape(id), "\" chunk")));
    }
  }
}

absl::StatusOr<PcmAudio> DecodeRawPcm16(absl::string_view bytes, int sample_rate, const std::string& name) {
  if (bytes.size() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("raw PCM16 file '", name, "' has an odd number of bytes (",
                                                   bytes.size(), "): not 16-bit samples, or truncated"));
  }
  if (sample_rate <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("raw PCM16 file '", name, "': sample rate ", sample_rate,
                                                   " Hz is not valid"));
  }
  return PcmAudio{sample_rate, LittleEndianSamples(bytes)};
}

absl::StatusOr<PcmAudio> ReadSpeechFile(const std::string& path, int raw_sample_rate) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, io_internal::ReadFileToString(path));
  const absl::string_view magic = absl::string_view(bytes).substr(0, 4);
  if (magic == "RIFF" || magic == "RIFX" || magic == "RF64" || absl::EndsWithIgnoreCase(path, ".wav")) {
    return DecodeWav(bytes, path);
  }
  for (const absl::string_view raw : {".raw", ".pcm", ".s16", ".sw"}) {
    if (absl::EndsWithIgnoreCase(path, raw)) return DecodeRawPcm16(bytes, raw_sample_rate, path);
  }
  // Any file of even length "is" raw PCM: guessing would turn a wrong file
  // into noise features without a word.
  return absl::InvalidArgumentError(absl::StrCat("speech file '", path,
                                                 "' is neither WAV (no RIFF magic) nor named as raw PCM16 "
                                                 "(.raw, .pcm, .s16, .sw)"));
}

std::string EncodeWav(const PcmAudio& audio) {
  const uint32_t data_bytes = static_cast<uint32_t>(2 * audio.samples.size());
  std::string out;
  auto u32 = [&out](uint32_t v) { for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i))); };
  auto u16 = [&out](uint16_t v) { for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>(v >> (8 * i))); };
  out += "RIFF";
  u32(36 + data_bytes);
  out += "WAVEfmt ";
  u32(16);
  u16(kFormatPcm);
  u16(1);
  u32(static_cast<uint32_t>(audio.sample_rate));
  u32(static_cast<uint32_t>(audio.sample_rate) * 2);
  u16(2);
  u16(16);
  out += "data";
  u32(data_bytes);
  for (const int16_t s : audio.samples) u16(static_cast<uint16_t>(s));
  return out;
}

}  // namespace gmmscore
