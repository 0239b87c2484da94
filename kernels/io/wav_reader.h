// Speech audio as 16-bit PCM samples: RIFF WAV files (PCM16, mono) and
// headerless raw PCM16 (little-endian, the sample rate given by the caller),
// the two inputs the front end (kernels/frontend/sphinx_front_end.h) takes.
//
//   GMM_ASSIGN_OR_RETURN(PcmAudio audio, ReadSpeechFile("speech.wav", 16000));
//   // audio.sample_rate == 16000, audio.samples: one int16 per sample
//
// WAV layout read here: "RIFF" u32 size "WAVE", then chunks (4-byte id,
// u32 little-endian size, the data, a pad byte when the size is odd) in any
// order; "fmt " must come before "data" and say PCM (format tag 1, or 0xFFFE
// WAVE_FORMAT_EXTENSIBLE with the PCM sub-format), 1 channel, 16 bits per
// sample. Other chunks (LIST, fact, ...) are skipped. Anything else is
// refused rather than converted: stereo, 8/24/32-bit, float, A-law/mu-law,
// big-endian RIFX and RF64 are UNIMPLEMENTED with a message saying what the
// file holds and what to convert it to.
//
// Errors name the file: NOT_FOUND for a missing file; DATA_LOSS when the file
// ends inside a header or before the end of its "data" chunk (truncated);
// INVALID_ARGUMENT for a malformed header (no RIFF/WAVE magic in a .wav file,
// no fmt or data chunk, inconsistent block alignment, an odd data size, a
// zero sample rate) and for a raw file with an odd number of bytes.
// Reentrant.
#ifndef GMMSCORE_KERNELS_IO_WAV_READER_H_
#define GMMSCORE_KERNELS_IO_WAV_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

struct PcmAudio {
  int sample_rate = 0;           // Hz
  std::vector<int16_t> samples;  // mono
};

// A WAV file held in memory; `name` names it in errors.
absl::StatusOr<PcmAudio> DecodeWav(absl::string_view bytes, const std::string& name);

// Raw little-endian PCM16 held in memory, at `sample_rate` Hz.
absl::StatusOr<PcmAudio> DecodeRawPcm16(absl::string_view bytes, int sample_rate, const std::string& name);

// Reads `path` as WAV when it starts with a RIFF-family magic or its name ends
// in ".wav" (so a .wav with a damaged header is an error, not noise), as raw
// PCM16 at `raw_sample_rate` when it ends in .raw, .pcm, .s16 or .sw, and
// refuses anything else (INVALID_ARGUMENT): raw samples have no header to
// recognise them by.
absl::StatusOr<PcmAudio> ReadSpeechFile(const std::string& path, int raw_sample_rate);

// A canonical 44-byte-header WAV file of `audio` (for tests and tools).
std::string EncodeWav(const PcmAudio& audio);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_WAV_READER_H_
