// Writes the binary seeds of corpus/ that no toolkit file small enough to
// keep provides, with the project's own encoders (so each is well-formed):
//   fuzz_make_seed_corpus tests/fuzz/corpus
// The text seeds (HTK MMFs, Kaldi final.mdl) are the crafted fixtures of the
// readers' tests; the others are small pocketsphinx-testdata files
// (docs/FUZZING.md).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/io/htk_model.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/model_loader.h"
#include "kernels/io/native_model_file.h"
#include "kernels/io/sphinx_features.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/io/wav_reader.h"

namespace gmmscore {
namespace {

bool Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream out(absl::StrCat(dir, "/", name), std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.good();
}

FloatMatrix Ramp(int rows, int cols) {
  FloatMatrix m(rows, cols);
  for (int64_t i = 0; i < rows * cols; ++i) m.data()[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  return m;
}

void Int32(std::string* out, int32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }

// An 8-bit pocketsphinx sendump: header strings, 0, rows, columns, bytes.
std::string Sendump(int streams, int densities, int senones) {
  std::string out;
  for (const std::string& s : {std::string("seed sendump"), std::string("fuzz corpus"),
                               absl::StrCat("feature_count ", streams), absl::StrCat("mixture_count ", densities),
                               absl::StrCat("model_count ", senones)}) {
    Int32(&out, static_cast<int32_t>(s.size() + 1));
    out += s;
    out.push_back('\0');
  }
  Int32(&out, 0);
  Int32(&out, densities);
  Int32(&out, senones);
  for (int i = 0; i < streams * densities * senones; ++i) out.push_back(static_cast<char>(10 + i % 50));
  return out;
}

int Run(const std::string& corpus, const std::string& tiny_am) {
  absl::StatusOr<DiagGmmModel> model = LoadModel(tiny_am);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  bool ok = true;
  ok &= Write(corpus + "/kaldi_model", "tiny_am.bin", FormatKaldiAmDiagGmmBinary(DiagGmmModelToKaldi(*model)));
  ok &= Write(corpus + "/native_model", "tiny_am.gmm", EncodeNativeModel(*model));

  std::string archive;
  ok &= AppendKaldiMatrixEntry("utt1", Ramp(3, 4).view(), /*text=*/false, &archive).ok();
  ok &= AppendKaldiMatrixEntry("utt2", Ramp(2, 2).view(), /*text=*/true, &archive).ok();
  ok &= Write(corpus + "/kaldi_matrix_archive", "mixed.ark", archive);

  ok &= Write(corpus + "/htk_parameter_file", "ramp.htk", EncodeHtkParameterFile(Ramp(4, 3).view()));
  ok &= Write(corpus + "/sphinx_mfc", "ramp.mfc", EncodeSphinxMfc(Ramp(6, 13).view()));

  SphinxGaussianFile means;
  means.num_codebooks = 2;
  means.num_streams = 2;
  means.num_densities = 2;
  means.stream_dims = {2, 1};
  means.values.assign(2 * 2 * 3, 0.5f);
  // Selector bytes: see sphinx_s3_fuzzer.cc.
  const std::string gaussians = EncodeSphinxGaussianFile(means);
  const std::string weights = EncodeSphinxMixtureWeights(3, 1, 2, {0.5f, 0.5f, 0.25f, 0.75f, 1.0f, 0.0f});
  const std::string dump = Sendump(1, 4, 3);
  ok &= DecodeSphinxGaussianFile(gaussians, "means").ok() && DecodeSphinxMixtureWeights(weights, "mixw").ok() &&
        DecodeSphinxSendump(dump, "sendump", 1, 4, 3).ok();
  ok &= Write(corpus + "/sphinx_s3", "means", std::string(1, '\0') + gaussians);
  ok &= Write(corpus + "/sphinx_s3", "mixture_weights", std::string(1, '\1') + weights);
  // kind 2, 1 stream (bits 2-3: 0), 4 densities (bits 4-6: 1); 3 senones.
  ok &= Write(corpus + "/sphinx_s3", "sendump", std::string{'\x12', '\x02'} + dump);

  PcmAudio audio{16000, std::vector<int16_t>(480)};
  for (size_t i = 0; i < audio.samples.size(); ++i) audio.samples[i] = static_cast<int16_t>((i * 37) % 2000 - 1000);
  ok &= Write(corpus + "/wav", "short.wav", EncodeWav(audio));
  std::string with_list = EncodeWav(PcmAudio{8000, {1, -1, 2, -2}});
  with_list.insert(36, std::string("LIST\x03\x00\x00\x00" "abc\x00", 12));
  ok &= Write(corpus + "/wav", "list_chunk.wav", with_list);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_make_seed_corpus CORPUS_DIR kernels/io/testdata/tiny_am.txt\n");
    return 2;
  }
  return gmmscore::Run(argv[1], argv[2]);
}
