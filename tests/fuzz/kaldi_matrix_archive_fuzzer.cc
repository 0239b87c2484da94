// Kaldi float-matrix archives (text and binary entries), each entry also
// taken as an fMLLR matrix.
#include <memory>

#include "kernels/io/kaldi_fmllr.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  std::unique_ptr<KaldiMatrixArchiveReader> reader =
      KaldiMatrixArchiveReader::FromString(fuzz::Bytes(data, size), fuzz::kInputName);
  while (true) {
    absl::StatusOr<bool> more = reader->Next();
    fuzz::CheckNamesInput(more.status());
    if (!more.ok() || !*more) break;
    const FloatMatrix& m = reader->matrix();
    if (m.rows() > 0 && m.rows() < 64) {
      fuzz::CheckNamesInput(FmllrFromMatrix(m, static_cast<int>(m.rows()), fuzz::kInputName).status());
    }
  }
  return 0;
}
